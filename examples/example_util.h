// example_util.h — printing helpers shared by the examples.
//
// Ranks run concurrently, so their lines would interleave. print_in_rank_order prints
// one block of text per rank, rank 0 first, with a barrier between turns.
#pragma once

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <collie/collie.h>

namespace examples {

// Every rank calls this; rank r's text appears after ranks 0..r-1's (may be empty).
inline void print_in_rank_order(const std::string& text, std::string_view group = collie::WORLD) {
  const int n = collie::get_group_size(group);
  const int me = collie::get_rank(group);
  for (int turn = 0; turn < n; ++turn) {
    if (turn == me && !text.empty()) {
      std::cout << text << std::flush;
    }
    collie::barrier(group);
  }
}

// The numpy-style text of a tensor (what operator<< prints).
inline std::string str(const collie::Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

// A tuple of tensors: "(a, b)", elements separated by `sep`.
inline std::string tuple_str(const std::vector<collie::Tensor>& tensors, const std::string& sep = ", ") {
  std::string out = "(";
  for (size_t i = 0; i < tensors.size(); ++i) out += (i ? sep : "") + str(tensors[i]);
  return out + ")";
}

// Runs an example's body, reporting collie errors as "error: ..." and exit status 1.
template <typename Body>
int run_example(Body body) {
  try {
    collie::init();
    body(collie::get_rank(), collie::get_group_size());
    collie::release();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error on rank " << collie::get_rank() << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace examples
