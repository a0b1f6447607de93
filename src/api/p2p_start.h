// How the point-to-point calls start a transfer (point_to_point.cc), shared with
// batch_isend_irecv (batch_isend_irecv.cc).
#pragma once

#include <string_view>
#include <utility>

#include "api/api_common.h"

namespace collie::detail {

// The group rank of world rank `world_rank`; KeyError naming `op` and `what`
// ("dst", "src") and the group's ranks if it is not a member. MindSpore looks p2p
// ranks up in a per-group dictionary and raises KeyError when the rank is
// missing; collie keeps the exception type (with a clearer message).
int peer_rank(const Group& g, int world_rank, std::string_view op, std::string_view what);

// Starts a send of `tensor` (any layout: a non-contiguous one is sent from a
// contiguous copy the Work keeps) to group rank `peer`.
WorkPtr start_send(Group& g, const Tensor& tensor, int peer, int tag, bool blocking);

// Starts a receive from group rank `peer` into `out` (contiguous, made for it).
WorkPtr start_recv_into(Group& g, const Tensor& out, int peer, int tag, bool blocking);

// Starts a receive from group rank `peer` into a new tensor of `shape` and `dtype`.
std::pair<Tensor, WorkPtr> start_recv(Group& g, const Shape& shape, DType dtype, int peer, int tag,
                                      bool blocking);

}  // namespace collie::detail
