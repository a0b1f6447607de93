// coarse_now(): steady_clock's time at tick resolution (a few ms), for progress
// timestamps that only feed deadlines measured in seconds.
//
// The engine stamps an operation's last progress after every step; reading the
// precise clock each time cost ~15 % of an 8-byte all_reduce. CLOCK_MONOTONIC_COARSE
// is the same clock as steady_clock's CLOCK_MONOTONIC (Linux), read without the
// timestamp counter, so both kinds of reading compare meaningfully.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace collie::detail {

// The reading in nanoseconds, for words in shared memory.
inline int64_t coarse_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline std::chrono::steady_clock::time_point coarse_now() {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::nanoseconds(coarse_now_ns())));
}

}  // namespace collie::detail
