// time_each_call and warm_up (src/bench/bench_sweep.h) with a fake Comm: what
// each call's time is counted from, by default (the rank's own start) and with
// --span (the latest of the ranks' starts, which the fake makes up), and how long
// the first size warms up.
#include "bench/bench_sweep.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace collie::bench {
namespace {

// One rank whose peer starts every call `peer_later` after it does.
struct FakeComm {
  std::chrono::nanoseconds call_takes{0};
  std::chrono::nanoseconds peer_later{0};
  int barriers = 0;
  int runs = 0;
  int gathers = 0;
  std::vector<int64_t> starts_given;  // what max_over_ranks was asked about

  void barrier() { ++barriers; }
  void run(int) {
    ++runs;
    if (call_takes.count() > 0) std::this_thread::sleep_for(call_takes);
  }
  void rewrite(int) {}
  std::vector<double> all_gather_double(double v) {
    ++gathers;
    return {v};  // one rank
  }
  void max_over_ranks(std::vector<int64_t>& starts) {
    starts_given = starts;
    for (int64_t& s : starts) s = std::max(s, s + static_cast<int64_t>(peer_later.count()));
  }
};

TEST(BenchSweep, EachCallFromItsOwnStartAsksNoPeer) {
  FakeComm comm;
  comm.call_takes = std::chrono::milliseconds(1);
  comm.peer_later = std::chrono::hours(1);  // ignored without --span
  const double us = time_each_call(comm, 3, 1, /*dirty=*/false, /*span=*/false);
  EXPECT_GE(us, 1000.0);
  EXPECT_EQ(comm.barriers, 3);
  EXPECT_EQ(comm.runs, 3);
  EXPECT_TRUE(comm.starts_given.empty());
}

TEST(BenchSweep, SpanCountsFromTheLastRanksStart) {
  FakeComm comm;
  comm.call_takes = std::chrono::milliseconds(1);
  // The peer started each call an hour after this rank finished it: every call
  // was over before the last rank began it, and counts 0.
  comm.peer_later = std::chrono::hours(1);
  EXPECT_EQ(time_each_call(comm, 3, 1, false, /*span=*/true), 0.0);
  ASSERT_EQ(comm.starts_given.size(), 3u);
  EXPECT_LT(comm.starts_given[0], comm.starts_given[1]);  // in call order, a call apart
  EXPECT_LT(comm.starts_given[1], comm.starts_given[2]);
  EXPECT_EQ(comm.barriers, 3);
  EXPECT_EQ(comm.runs, 3);
}

TEST(BenchSweep, SpanWithPeersStartingTogetherIsTheCallsOwnTime) {
  FakeComm comm;
  comm.call_takes = std::chrono::milliseconds(1);
  comm.peer_later = std::chrono::nanoseconds(0);
  EXPECT_GE(time_each_call(comm, 3, 1, false, /*span=*/true), 1000.0);
}

TEST(BenchSweep, WarmUpIsTheGivenCallsButForALoopsFirstSize) {
  BenchConfig config;
  config.warmup = 3;
  FakeComm each;
  warm_up(each, config, 1, /*first_size=*/true);  // a median: stalls do not matter
  EXPECT_EQ(each.runs, 3);
  EXPECT_EQ(each.gathers, 0);

  config.loop = true;
  FakeComm later;
  warm_up(later, config, 1, /*first_size=*/false);
  EXPECT_EQ(later.runs, 3);

  config.warmup = 0;  // asked for none: none
  FakeComm none;
  warm_up(none, config, 1, true);
  EXPECT_EQ(none.runs, 0);
}

TEST(BenchSweep, ALoopsFirstSizeWarmsUpForLong) {
  BenchConfig config;
  config.loop = true;
  config.warmup = 2;
  FakeComm comm;
  comm.call_takes = std::chrono::milliseconds(1);
  const auto t0 = std::chrono::steady_clock::now();
  warm_up(comm, config, 1, /*first_size=*/true);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took.count(), kFirstLoopWarmupSeconds);
  EXPECT_GT(comm.runs, 2);
  EXPECT_GE(comm.gathers, 2);  // the ranks agreed after each round, the last to stop
}

}  // namespace
}  // namespace collie::bench
