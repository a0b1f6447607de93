// Helpers shared by the libFuzzer targets in tests/fuzz.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace collie::fuzz {

// The input as NUL-separated strings (at most `max` of them), the shape of an
// argv or of a list of environment values.
inline std::vector<std::string> split(const uint8_t* data, size_t size, size_t max = 64) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < size && out.size() <= max; ++i) {
    if (data[i] == '\0') out.emplace_back();
    else out.back().push_back(static_cast<char>(data[i]));
  }
  if (out.size() > max) out.resize(max);
  return out;
}

// A broken invariant is a finding: print it and abort, which libFuzzer reports
// as a crash with the input that caused it.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

#define FUZZ_CHECK(cond, what)                    \
  do {                                            \
    if (!(cond)) ::collie::fuzz::fail(what);      \
  } while (0)

}  // namespace collie::fuzz
