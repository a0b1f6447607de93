// all_to_all with split/concat dims and all_to_all_v on flat counts (collie/comm_ext.h),
// both built on comm_func's all-to-all functions.
#include <numeric>
#include <string>

#include "autograd/tensor_math.h"
#include "collie/comm_ext.h"
#include "collie/errors.h"

namespace collie {

using autograd::detail::cat_dim;
using autograd::detail::narrow;
using autograd::detail::normalize_dim;

Tensor all_to_all(const Tensor& tensor, int64_t split_dim, int64_t concat_dim,
                  std::string_view group) {
  const int n = get_group_size(group);
  const int64_t sd = normalize_dim(split_dim, tensor.dim(), "all_to_all split_dim");
  const int64_t cd = normalize_dim(concat_dim, tensor.dim(), "all_to_all concat_dim");
  if (tensor.size(sd) % n != 0) {
    throw ValueError("all_to_all: size " + std::to_string(tensor.size(sd)) + " of split_dim " +
                     std::to_string(sd) + " is not divisible by the group size " +
                     std::to_string(n));
  }
  // Block j of split_dim goes to rank j: stacked along dim 0 (the input itself
  // when split_dim is 0), the blocks are an even all_to_all_single, whose output
  // holds the blocks received, stacked along dim 0 in rank order; every rank
  // passes the same shape, so they have the shape of the blocks sent. concat_dim 0
  // is that output; another dim concatenates them along it. (Each block made
  // contiguous, exchanged through the list form and concatenated again cost three
  // copies of the tensor where split_dim and concat_dim are 0.)
  const int64_t block = tensor.size(sd) / n;
  Tensor stacked = tensor;
  if (sd != 0) {
    std::vector<Tensor> blocks;
    for (int j = 0; j < n; ++j) blocks.push_back(narrow(tensor, sd, j * block, block));
    stacked = Tensor::cat(blocks);
  }
  Tensor received =
      all_to_all_single_with_output_shape(stacked.shape(), stacked, {}, {}, group).first;
  if (cd == 0) return received;
  return cat_dim(received.split(n), cd);
}

Tensor all_to_all_v(const Tensor& tensor, const std::vector<int64_t>& send_numel_list,
                    const std::vector<int64_t>& recv_numel_list, std::string_view group) {
  const size_t n = static_cast<size_t>(get_group_size(group));
  if (send_numel_list.size() != n || recv_numel_list.size() != n) {
    throw ValueError("all_to_all_v: send_numel_list and recv_numel_list need one entry per rank (" +
                     std::to_string(n) + "), got " + std::to_string(send_numel_list.size()) +
                     " and " + std::to_string(recv_numel_list.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    if (send_numel_list[i] < 0 || recv_numel_list[i] < 0) {
      throw ValueError("all_to_all_v: element counts must not be negative");
    }
  }
  const int64_t sent = std::accumulate(send_numel_list.begin(), send_numel_list.end(), int64_t{0});
  const int64_t recv = std::accumulate(recv_numel_list.begin(), recv_numel_list.end(), int64_t{0});
  if (sent != tensor.numel()) {
    throw ValueError("all_to_all_v: send_numel_list sums to " + std::to_string(sent) +
                     " but the tensor has " + std::to_string(tensor.numel()) + " elements");
  }
  return all_to_all_single_with_output_shape({recv}, tensor.reshape({tensor.numel()}),
                                             recv_numel_list, send_numel_list, group)
      .first;
}

}  // namespace collie
