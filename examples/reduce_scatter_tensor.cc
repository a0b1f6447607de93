// reduce_scatter_tensor.cc — comm_func.reduce_scatter_tensor's docstring example: the
// ranks' ones([8, 8]) are summed and rank r keeps rows [4r, 4r + 4) of the sum.
//
// Run:  collie run -n 2 build/examples/reduce_scatter_tensor
// Each rank prints (rank 0 first):
//   [[2. 2. 2. 2. 2. 2. 2. 2.]
//    [2. 2. 2. 2. 2. 2. 2. 2.]
//    [2. 2. 2. 2. 2. 2. 2. 2.]
//    [2. 2. 2. 2. 2. 2. 2. 2.]]
#include "example_util.h"

int main() {
  return examples::run_example([](int, int) {
    auto input_tensor = collie::Tensor::ones({8, 8}, collie::DType::Float32);
    auto [output, handle] = collie::reduce_scatter_tensor(input_tensor);
    examples::print_in_rank_order(examples::str(output) + "\n");
  });
}
