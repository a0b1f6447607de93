// reduce.cc — comm_func.reduce's docstring example: the ranks' ones([2, 8]) are summed
// onto world rank 1; every other rank gets a shape-[1] tensor of zeros.
//
// Run:  collie run -n 4 build/examples/reduce
// Prints:
//   Process with rank 0: [0.]
//   Process with rank 1: [[4. 4. 4. 4. 4. 4. 4. 4.]
//    [4. 4. 4. 4. 4. 4. 4. 4.]]
//   Process with rank 2: [0.]
//   Process with rank 3: [0.]
#include "example_util.h"

int main() {
  return examples::run_example([](int rank, int) {
    const int dest_rank = 1;
    auto input_tensor = collie::Tensor::ones({2, 8}, collie::DType::Float32);
    auto output = collie::reduce(input_tensor, /*dst=*/dest_rank);
    examples::print_in_rank_order("Process with rank " + std::to_string(rank) + ": " +
                                  examples::str(output) + "\n");
  });
}
