// all_reduce.cc — comm_func.all_reduce's docstring example: every rank contributes
// ones([2, 8]) and every rank receives the element-wise sum.
//
// Run:  collie run -n 2 build/examples/all_reduce
// Each rank prints (rank 0 first):
//   [[2. 2. 2. 2. 2. 2. 2. 2.]
//    [2. 2. 2. 2. 2. 2. 2. 2.]]
#include "example_util.h"

int main() {
  return examples::run_example([](int, int) {
    auto input_tensor = collie::Tensor::ones({2, 8}, collie::DType::Float32);
    auto [output, handle] = collie::all_reduce(input_tensor);  // synchronous: handle is empty
    examples::print_in_rank_order(examples::str(output) + "\n");
  });
}
