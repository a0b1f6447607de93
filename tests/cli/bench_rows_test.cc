// keep_best: how the rounds of `collie bench --rounds N` combine.
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

}  // namespace
}  // namespace collie::cli
