// scatter_tensor.cc — comm_func.scatter_tensor's docstring example: rank 0's
// arange(8).reshape(4, 2) is split along dim 0; rank r receives rows [2r, 2r + 2).
// Every rank passes a tensor of the same shape and dtype; only src's values are used.
//
// Run:  collie run -n 2 build/examples/scatter_tensor
// Prints:
//   # rank_0
//   [[0. 1.]
//    [2. 3.]]
//   # rank_1
//   [[4. 5.]
//    [6. 7.]]
#include "example_util.h"

int main() {
  return examples::run_example([](int rank, int) {
    auto input = collie::Tensor::arange(int64_t{8}, collie::DType::Float32).reshape({4, 2});
    auto out = collie::scatter_tensor(input, /*src=*/0);
    examples::print_in_rank_order("# rank_" + std::to_string(rank) + "\n" + examples::str(out) + "\n");
  });
}
