// isend_irecv.cc — the docstring example of comm_func.isend and comm_func.irecv: like
// send_recv, but asynchronous: isend returns a handle, irecv returns (tensor, handle)
// and the tensor is valid after handle.wait().
//
// Run:  collie run -n 2 build/examples/isend_irecv
// Prints:
//   rank1:
//   [[0.01 0.01]
//    [0.01 0.01]]
#include "example_util.h"

int main() {
  return examples::run_example([](int rank, int size) {
    std::string text;
    if (rank < size / 2) {
      auto x = collie::Tensor::full({2, 2}, 0.01 * (rank + 1), collie::DType::Float32);
      collie::CommHandle handle = collie::isend(x, rank + size / 2);
      handle.wait();
    } else if (rank - size / 2 < size / 2) {
      auto x2 = collie::Tensor::ones({2, 2}, collie::DType::Float32);
      auto [output, handle] = collie::irecv(x2, rank - size / 2);
      handle.wait();
      text = "rank" + std::to_string(rank) + ":\n" + examples::str(output) + "\n";
    }
    examples::print_in_rank_order(text);
  });
}
