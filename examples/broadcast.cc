// broadcast.cc — comm_func.broadcast's docstring example: every rank receives rank 0's
// arange(8).reshape(2, 4). (The docstring passes the same data on every rank; here the
// other ranks pass zeros to show that only src's values travel.)
//
// Run:  collie run -n 2 build/examples/broadcast
// Each rank prints (rank 0 first):
//   [[0. 1. 2. 3.]
//    [4. 5. 6. 7.]]
#include "example_util.h"

int main() {
  return examples::run_example([](int rank, int) {
    auto data = rank == 0 ? collie::Tensor::arange(int64_t{8}, collie::DType::Float32).reshape({2, 4})
                          : collie::Tensor::zeros({2, 4}, collie::DType::Float32);
    auto out = collie::broadcast(data, /*src=*/0);
    examples::print_in_rank_order(examples::str(out) + "\n");
  });
}
