// comm_handle_wait.cc — CommHandle.wait's docstring example: an asynchronous all_reduce
// returns at once with (output, handle); the output is valid after handle.wait().
//
// Run:  collie run -n 2 build/examples/comm_handle_wait
// Each rank prints (rank 0 first):
//   [[2. 2. 2. 2. 2. 2. 2. 2.]
//    [2. 2. 2. 2. 2. 2. 2. 2.]]
#include "example_util.h"

int main() {
  return examples::run_example([](int, int) {
    auto input_tensor = collie::Tensor::ones({2, 8}, collie::DType::Float32);
    auto [output, handle] =
        collie::all_reduce(input_tensor, collie::ReduceOp::SUM, collie::WORLD, /*async_op=*/true);
    // ... other work could overlap with the reduction here ...
    handle.wait();
    examples::print_in_rank_order(examples::str(output) + "\n");
  });
}
