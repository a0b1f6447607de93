// The launch-environment helpers that need no launcher: the "more ranks than
// CPUs" rule both engines use to choose between polling and sleeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "runtime/env.h"

namespace collie::detail {
namespace {

unsigned cpus() { return std::max(1u, std::thread::hardware_concurrency()); }

TEST(MoreRanksThanCpus, UpToOneRankPerCpuIsNotOversubscribed) {
  const int n = static_cast<int>(cpus());
  EXPECT_FALSE(more_ranks_than_cpus(1));
  EXPECT_FALSE(more_ranks_than_cpus(n));
}

TEST(MoreRanksThanCpus, OneRankMoreThanCpusIs) {
  const int n = static_cast<int>(cpus());
  EXPECT_TRUE(more_ranks_than_cpus(n + 1));
  EXPECT_TRUE(more_ranks_than_cpus(4 * n));
}

TEST(MoreRanksThanCpus, NoRanksKnownIsNot) {
  EXPECT_FALSE(more_ranks_than_cpus(0));
  EXPECT_FALSE(more_ranks_than_cpus(-1));
}

}  // namespace
}  // namespace collie::detail
