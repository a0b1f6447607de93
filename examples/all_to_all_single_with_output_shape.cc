// all_to_all_single_with_output_shape.cc — the docstring example of
// comm_func.all_to_all_single_with_output_shape: rank r's input [0, 1] + 2r is split into
// equal parts along dim 0; part i goes to rank i; the parts received are concatenated.
//
// Run:  collie run -n 2 build/examples/all_to_all_single_with_output_shape
// Prints:
//   rank 0:
//   [0. 2.]
//   rank 1:
//   [1. 3.]
#include "example_util.h"

int main() {
  return examples::run_example([](int rank, int) {
    auto input = collie::Tensor::from_vector<float>({0.f + 2 * rank, 1.f + 2 * rank});
    collie::Shape output_shape = {2};
    auto [result, handle] = collie::all_to_all_single_with_output_shape(output_shape, input);
    examples::print_in_rank_order("rank " + std::to_string(rank) + ":\n" + examples::str(result) + "\n");
  });
}
