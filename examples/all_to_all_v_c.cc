// all_to_all_v_c.cc — comm_func.all_to_all_v_c's docstring example: send_count_matrix
// [0, 3, 3, 0] says rank 0 sends 3 rows to rank 1 and rank 1 sends 3 rows to rank 0;
// the rows received are written into `output`. Input: [0, 1, 2] * rank.
//
// Run:  collie run -n 2 build/examples/all_to_all_v_c
// Prints:
//   rank 0:
//   [0. 1. 2.]
//   rank 1:
//   [0. 0. 0.]
#include "example_util.h"

int main() {
  return examples::run_example([](int this_rank, int) {
    auto output = collie::Tensor::zeros({3}, collie::DType::Float32);
    auto tensor = collie::Tensor::from_vector<float>({0.f, 1.f * this_rank, 2.f * this_rank});
    collie::CommHandle handle = collie::all_to_all_v_c(output, tensor, {0, 3, 3, 0});
    handle.wait();  // empty (synchronous call): returns at once
    examples::print_in_rank_order("rank " + std::to_string(this_rank) + ":\n" + examples::str(output) + "\n");
  });
}
