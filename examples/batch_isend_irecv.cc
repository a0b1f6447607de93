// batch_isend_irecv.cc — comm_func.batch_isend_irecv's docstring example: a ring. Each
// rank sends rank+1 to the next rank and receives from the previous one, in one batch.
// The result has one tensor per op: a 0-d zero placeholder for the isend, the received
// tensor for the irecv.
//
// Run:  collie run -n 2 build/examples/batch_isend_irecv
// Prints:
//   rank 0:
//   (0.0, 2.0)
//   rank 1:
//   (0.0, 1.0)
#include "example_util.h"

int main() {
  return examples::run_example([](int this_rank, int world_size) {
    const int next_rank = (this_rank + 1) % world_size;
    const int prev_rank = (this_rank + world_size - 1) % world_size;
    auto send_tensor = collie::Tensor::scalar(this_rank + 1, collie::DType::Float32);
    auto recv_tensor = collie::Tensor::scalar(0.0, collie::DType::Float32);
    collie::P2POp send_op("isend", send_tensor, next_rank);
    collie::P2POp recv_op("irecv", recv_tensor, prev_rank);
    std::vector<collie::Tensor> output = collie::batch_isend_irecv({send_op, recv_op});
    examples::print_in_rank_order("rank " + std::to_string(this_rank) + ":\n" + examples::tuple_str(output) +
                                  "\n");
  });
}
