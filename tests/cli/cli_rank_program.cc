// A small collie program for the launcher's integration tests (cli_e2e_test.cc):
// joins the job from the environment `collie run` gives it, all-reduces
// (rank + 1) and prints the result. Modes (argv[1]):
//   ok     finish normally (barrier, release)
//   crash  rank 1 aborts after the all-reduce; the others wait in a barrier
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collie/collie.h"

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "ok";
  collie::init();
  const int rank = collie::get_rank();
  const int size = collie::get_group_size();
  auto [sum, handle] = collie::all_reduce(collie::Tensor::full({4}, rank + 1.0));
  handle.wait();
  std::printf("rank %d of %d sum %g\n", rank, size, sum.item(0));
  if (mode == "crash" && rank == 1) std::abort();
  collie::barrier();
  collie::release();
  return 0;
}
