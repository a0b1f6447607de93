// gather_into_tensor.cc — comm_func.gather_into_tensor's docstring example: every rank's
// arange(4).reshape(2, 2) is concatenated along dim 0 on rank 0; the other ranks get a
// shape-[1] tensor of zeros.
//
// Run:  collie run -n 2 build/examples/gather_into_tensor
// Prints:
//   Process with rank 0: [[0. 1.]
//    [2. 3.]
//    [0. 1.]
//    [2. 3.]]
//   Process with rank 1: [0.]
#include "example_util.h"

int main() {
  return examples::run_example([](int rank, int) {
    auto input = collie::Tensor::arange(int64_t{4}, collie::DType::Float32).reshape({2, 2});
    auto output = collie::gather_into_tensor(input, /*dst=*/0);
    examples::print_in_rank_order("Process with rank " + std::to_string(rank) + ": " +
                                  examples::str(output) + "\n");
  });
}
