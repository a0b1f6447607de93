// all_gather_into_tensor.cc — comm_func.all_gather_into_tensor's docstring example: each
// rank's ones([2, 8]) are concatenated along dim 0 into a [4, 8] tensor on every rank.
//
// Run:  collie run -n 2 build/examples/all_gather_into_tensor
// Each rank prints (rank 0 first):
//   [[1. 1. 1. 1. 1. 1. 1. 1.]
//    [1. 1. 1. 1. 1. 1. 1. 1.]
//    [1. 1. 1. 1. 1. 1. 1. 1.]
//    [1. 1. 1. 1. 1. 1. 1. 1.]]
#include "example_util.h"

int main() {
  return examples::run_example([](int, int) {
    auto input_tensor = collie::Tensor::ones({2, 8}, collie::DType::Float32);
    auto [output, handle] = collie::all_gather_into_tensor(input_tensor);
    examples::print_in_rank_order(examples::str(output) + "\n");
  });
}
