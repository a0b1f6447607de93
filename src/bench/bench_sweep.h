// The measurement loop shared by the collie and MPI bench workers.
//
// A worker supplies a Comm with: rank(), size(), barrier(), all_gather_double(v),
// max_over_ranks(values) (element-wise, in place),
// and prepare(op, bytes, copies) / run(copy) / check(op) for the operation
// under test, and rewrite(copy), which writes input `copy` again with the same
// values (config.dirty: before every timed call, untimed). For each op and size the loop warms up,
// then times `iters` calls (a barrier before each, so every call starts together) and takes each
// rank's median; with config.span each call's time on a rank is counted from the latest of the
// ranks' starts of it instead of the rank's own; with config.loop it times the `iters` calls back
// to back after one barrier and takes each rank's mean (nccl-tests' method). Rank 0 gathers the
// ranks' times and prints one line:
//   RESULT <op> <bytes> <median_us> <min_us> <max_us> <ok|FAIL|n/a>
// median/min/max are over ranks of the per-rank times.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_config.h"

namespace collie::bench {

// Each call after its own barrier: the median of the calls' times (µs), each
// from this rank's start of it or, with `span`, from the last rank's (ranks on
// one machine read the same monotonic clock). A rank done before the last one
// started (a broadcast's root) counts 0.
template <typename Comm>
double time_each_call(Comm& comm, int iters, int copies, bool dirty, bool span) {
  using Clock = std::chrono::steady_clock;
  std::vector<int64_t> starts(static_cast<size_t>(iters)), ends(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    if (dirty) comm.rewrite(i % copies);
    comm.barrier();
    const Clock::time_point t0 = Clock::now();
    comm.run(i % copies);
    const Clock::time_point t1 = Clock::now();
    starts[static_cast<size_t>(i)] = t0.time_since_epoch().count();
    ends[static_cast<size_t>(i)] = t1.time_since_epoch().count();
  }
  if (span) comm.max_over_ranks(starts);  // after the timed calls: not among them
  std::vector<double> times(static_cast<size_t>(iters));
  for (size_t i = 0; i < times.size(); ++i) {
    const Clock::duration took(std::max<int64_t>(ends[i] - starts[i], 0));
    times[i] = std::chrono::duration<double, std::micro>(took).count();
  }
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  return times[static_cast<size_t>(iters / 2)];
}

// The calls back to back after one barrier: their mean time (µs). No rank gets
// more than a call or so ahead of its peers, so the ranks' means differ little.
template <typename Comm>
double time_back_to_back(Comm& comm, int iters, int copies) {
  comm.barrier();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) comm.run(i % copies);
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
}

// How long --loop warms up a process's first size at least (below).
inline constexpr double kFirstLoopWarmupSeconds = 0.02;

// `config.warmup` calls and, back to back (config.loop) at the first size a
// process times, more until the warm-up has lasted kFirstLoopWarmupSeconds:
// in a process's first milliseconds calls stall now and then for 0.1-0.5 ms,
// on both sides (2 ranks, send_recv of 8 B, 1,000 calls after 3 warm-up calls:
// a mean of 0.53-1.97 us per call in collie and 0.63-0.71 in OpenMPI, against
// 0.52-0.57 and 0.49-0.54 after 20,000). A median after a barrier per call
// shrugs such stalls off; a mean does not. Every call is a collective, so the
// ranks agree on when to stop: rank 0's clock decides, between rounds of calls
// (an estimate from the first calls' time misleads: the first waits for the
// slowest rank to arrive).
template <typename Comm>
void warm_up(Comm& comm, const BenchConfig& config, int copies, bool first_size) {
  const auto t0 = std::chrono::steady_clock::now();
  int calls = 0;
  for (; calls < config.warmup; ++calls) comm.run(calls % copies);
  if (!config.loop || !first_size || config.warmup == 0) return;
  for (int round = config.warmup;; round = std::min(2 * round, 4096)) {
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (comm.all_gather_double(took)[0] >= kFirstLoopWarmupSeconds) return;
    for (int i = 0; i < round; ++i, ++calls) comm.run(calls % copies);
  }
}

template <typename Comm>
int run_sweep(Comm& comm, const BenchConfig& config) {
  int failures = 0;
  bool first_size = true;  // of this process
  for (const std::string& op : config.ops) {
    for (size_t bytes : sweep_sizes(config)) {
      // Cold mode rotates through enough inputs to overflow the caches.
      int copies = config.cold ? static_cast<int>(std::clamp<size_t>(
                                     (256u << 20) / std::max<size_t>(bytes, 1), 1, 64))
                               : 1;
      if (!comm.prepare(op, bytes, copies)) {
        if (comm.rank() == 0) std::printf("RESULT %s %zu 0 0 0 n/a\n", op.c_str(), bytes);
        continue;
      }
      warm_up(comm, config, copies, first_size);
      first_size = false;
      const int iters = iterations_for(config, bytes);
      const double per_call = config.loop
                                  ? time_back_to_back(comm, iters, copies)
                                  : time_each_call(comm, iters, copies, config.dirty, config.span);
      const bool ok = !config.check || comm.check(op);  // the last call's result
      std::vector<double> medians = comm.all_gather_double(per_call);
      std::vector<double> oks = comm.all_gather_double(ok ? 1.0 : 0.0);
      bool all_ok = std::all_of(oks.begin(), oks.end(), [](double v) { return v == 1.0; });
      if (!all_ok) ++failures;
      if (comm.rank() == 0) {
        std::sort(medians.begin(), medians.end());
        std::printf("RESULT %s %zu %.3f %.3f %.3f %s\n", op.c_str(), bytes,
                    medians[medians.size() / 2], medians.front(), medians.back(),
                    !config.check ? "n/a" : (all_ok ? "ok" : "FAIL"));
        std::fflush(stdout);
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace collie::bench
