// send_recv.cc — the docstring example of comm_func.send and comm_func.recv: ranks in the
// first half send ones([2, 2]) * 0.01 * (rank + 1) to rank + size/2, which receive into a
// tensor of that shape and dtype (its values are ignored) and print it.
//
// Run:  collie run -n 2 build/examples/send_recv
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
      collie::send(x, rank + size / 2);
    } else if (rank - size / 2 < size / 2) {
      auto x2 = collie::Tensor::ones({2, 2}, collie::DType::Float32);
      auto output = collie::recv(x2, rank - size / 2);
      text = "rank" + std::to_string(rank) + ":\n" + examples::str(output) + "\n";
    }
    examples::print_in_rank_order(text);
  });
}
