// keep_best and RoundLog: how the rounds of `collie bench --rounds N` combine.
#include "cli/bench_rows.h"

#include <gtest/gtest.h>

namespace collie::cli {
namespace {

BenchRow row(size_t bytes, double median, const char* check = "ok") {
  return BenchRow{"all_reduce", bytes, median, median - 0.5, median + 0.5, check};
}

TEST(BenchRows, EachSizeKeepsTheRoundWithTheLowestMedianInSweepOrder) {
  std::vector<BenchRow> best;
  for (const BenchRow& r : {row(8, 2.0), row(64, 5.0)}) keep_best(best, r);
  for (const BenchRow& r : {row(8, 1.5), row(64, 7.0)}) keep_best(best, r);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].bytes, 8u);
  EXPECT_EQ(best[0].median_us, 1.5);
  EXPECT_EQ(best[0].min_us, 1.0) << "min and max come with the median's round";
  EXPECT_EQ(best[1].bytes, 64u);
  EXPECT_EQ(best[1].median_us, 5.0);
}

TEST(BenchRows, AWrongResultInAnyRoundStaysFail) {
  std::vector<BenchRow> best;
  keep_best(best, row(8, 1.0, "FAIL"));
  keep_best(best, row(8, 3.0));
  EXPECT_EQ(best[0].check, "FAIL") << "a slower correct round does not clear it";
  keep_best(best, row(8, 0.5));
  EXPECT_EQ(best[0].check, "FAIL") << "nor does a faster one";
  EXPECT_EQ(best[0].median_us, 0.5);
  std::vector<BenchRow> other;
  keep_best(other, row(8, 1.0));
  keep_best(other, row(8, 2.0, "FAIL"));
  EXPECT_EQ(other[0].check, "FAIL");
  EXPECT_EQ(other[0].median_us, 1.0);
}

TEST(BenchRows, OpsAreKeptApart) {
  std::vector<BenchRow> best;
  keep_best(best, row(8, 1.0));
  BenchRow gather = row(8, 0.5);
  gather.op = "all_gather";
  keep_best(best, gather);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].median_us, 1.0);
  EXPECT_EQ(best[1].op, "all_gather");
}

BenchRow timed(const char* op, size_t bytes, double median) {
  return BenchRow{op, bytes, median, median, median, "ok"};
}

TEST(RoundLog, EachRoundPairsTheTwoSidesOfOneSize) {
  RoundLog log;
  log.add("all_reduce", {timed("all_reduce", 8, 2.0), timed("all_reduce", 64, 4.0)},
          {timed("all_reduce", 8, 1.0), timed("all_reduce", 64, 6.0)});
  log.add("all_reduce", {timed("all_reduce", 8, 1.0), timed("all_reduce", 64, 3.0)},
          {timed("all_reduce", 8, 0.9), timed("all_reduce", 64, 9.0)});
  EXPECT_EQ(log.rounds("all_reduce"), 2u);
  const RoundMedians& small = log.of("all_reduce", 8);
  EXPECT_EQ(small.collie_us, (std::vector<double>{2.0, 1.0}));
  EXPECT_EQ(small.mpi_us, (std::vector<double>{1.0, 0.9}));
  // Round by round: 1.0 / 2.0 and 0.9 / 1.0; the best of each side would give
  // 0.9 / 1.0, from two different rounds.
  EXPECT_EQ(paired_speedups(small), (std::vector<double>{0.5, 0.9}));
  EXPECT_EQ(paired_speedups(log.of("all_reduce", 64)), (std::vector<double>{1.5, 3.0}));
}

TEST(RoundLog, OpsCountTheirOwnRoundsAndIgnoreOtherOpsRows) {
  RoundLog log;
  log.add("broadcast", {timed("broadcast", 8, 1.0)}, {timed("broadcast", 8, 2.0)});
  // A row of another op in this op's round is not recorded under either.
  log.add("reduce", {timed("reduce", 8, 4.0), timed("broadcast", 8, 9.0)},
          {timed("reduce", 8, 2.0)});
  log.add("broadcast", {timed("broadcast", 8, 2.0)}, {timed("broadcast", 8, 3.0)});
  EXPECT_EQ(log.rounds("broadcast"), 2u);
  EXPECT_EQ(log.rounds("reduce"), 1u);
  EXPECT_EQ(log.rounds("all_gather"), 0u);
  EXPECT_EQ(log.of("broadcast", 8).collie_us, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(paired_speedups(log.of("broadcast", 8)), (std::vector<double>{2.0, 1.5}));
  EXPECT_EQ(paired_speedups(log.of("reduce", 8)), (std::vector<double>{0.5}));
  EXPECT_TRUE(log.of("all_gather", 8).collie_us.empty());
  EXPECT_TRUE(paired_speedups(log.of("all_gather", 8)).empty());
}

TEST(RoundLog, ASizeOneSideLacksInARoundIsLeftOutOfThatRoundsPairs) {
  RoundLog log;
  // Round 0: OpenMPI's worker failed after 8 B; round 1: collie's never got to
  // 64 B; round 2: both sides have every size; round 3: 512 B is new.
  log.add("gather", {timed("gather", 8, 1.0), timed("gather", 64, 2.0)}, {timed("gather", 8, 3.0)});
  log.add("gather", {timed("gather", 8, 1.0)}, {timed("gather", 8, 2.0), timed("gather", 64, 4.0)});
  log.add("gather", {timed("gather", 8, 2.0), timed("gather", 64, 2.0)},
          {timed("gather", 8, 2.0), timed("gather", 64, 5.0)});
  log.add("gather", {timed("gather", 512, 4.0)}, {timed("gather", 512, 2.0)});
  const RoundMedians& mid = log.of("gather", 64);
  EXPECT_EQ(mid.collie_us, (std::vector<double>{2.0, 0.0, 2.0, 0.0}));
  EXPECT_EQ(mid.mpi_us, (std::vector<double>{0.0, 4.0, 5.0, 0.0}));
  EXPECT_EQ(paired_speedups(mid), (std::vector<double>{2.5}));
  EXPECT_EQ(paired_speedups(log.of("gather", 8)), (std::vector<double>{3.0, 2.0, 1.0}));
  // A size first seen in a later round holds zeros for the rounds before.
  EXPECT_EQ(log.of("gather", 512).collie_us, (std::vector<double>{0.0, 0.0, 0.0, 4.0}));
  EXPECT_EQ(paired_speedups(log.of("gather", 512)), (std::vector<double>{0.5}));
}

}  // namespace
}  // namespace collie::cli
