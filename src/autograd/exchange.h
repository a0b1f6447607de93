// The list exchange under NeighborExchange, with the tag as a parameter so that its
// gradient (the same exchange with every edge reversed) travels on its own tag.
#pragma once

#include <string_view>
#include <vector>

#include "collie/tensor.h"

namespace collie::autograd::detail {

// Sends inputs[i] to send_rank_ids[i] and receives recv_shapes[i] of `dtype` from
// recv_rank_ids[i], all with `tag`; returns what was received, in recv order.
std::vector<Tensor> exchange_lists(const std::vector<Tensor>& inputs,
                                   const std::vector<int>& send_rank_ids,
                                   const std::vector<int>& recv_rank_ids,
                                   const std::vector<Shape>& recv_shapes, std::string_view group,
                                   DType dtype, int tag);

}  // namespace collie::autograd::detail
