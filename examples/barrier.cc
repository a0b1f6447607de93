// barrier.cc — comm_func.barrier's docstring example: every rank waits until all ranks
// have entered the barrier, then prints.
//
// Run:  collie run -n 2 build/examples/barrier
// Each rank prints:
//   barrier finish!
#include "example_util.h"

int main() {
  return examples::run_example([](int, int) {
    collie::barrier();
    examples::print_in_rank_order("barrier finish!\n");
  });
}
