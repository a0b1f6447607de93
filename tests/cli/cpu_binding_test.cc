// cpu_for_rank / parse_bind_policy (src/cli/cpu_binding.h): which CPU a rank of
// `collie run` is pinned to. The end-to-end check is in cli_e2e_test.cc.
#include "cli/cpu_binding.h"

#include <gtest/gtest.h>

namespace collie::cli {
namespace {

TEST(CliCpuBinding, ParsesThePolicies) {
  BindPolicy p = BindPolicy::kNone;
  EXPECT_TRUE(parse_bind_policy("core", &p));
  EXPECT_EQ(p, BindPolicy::kCore);
  EXPECT_TRUE(parse_bind_policy("auto", &p));
  EXPECT_EQ(p, BindPolicy::kAuto);
  EXPECT_TRUE(parse_bind_policy("none", &p));
  EXPECT_EQ(p, BindPolicy::kNone);
  EXPECT_FALSE(parse_bind_policy("socket", &p));
  EXPECT_FALSE(parse_bind_policy("", &p));
  EXPECT_EQ(p, BindPolicy::kNone) << "a refused spelling leaves the policy alone";
}

TEST(CliCpuBinding, AutoPinsOnlyJobsThatFillMostOfTheCpus) {
  const std::vector<int> cpus = {2, 5, 7};
  EXPECT_EQ(cpu_for_rank(BindPolicy::kAuto, 0, 1, cpus), -1) << "one rank: nothing to gain";
  for (int n = 2; n <= 3; ++n) {
    for (int r = 0; r < n; ++r) EXPECT_EQ(cpu_for_rank(BindPolicy::kAuto, r, n, cpus), cpus[r]);
  }
  for (int r = 0; r < 7; ++r) {
    EXPECT_EQ(cpu_for_rank(BindPolicy::kAuto, r, 7, cpus), cpus[r % 3])
        << "more ranks than CPUs: round robin, as core";
  }
  const std::vector<int> many = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int n : {2, 4}) {
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(cpu_for_rank(BindPolicy::kAuto, r, n, many), -1)
          << n << " ranks take half of 8 CPUs or less: left to the scheduler";
    }
  }
  for (int r = 0; r < 5; ++r) EXPECT_EQ(cpu_for_rank(BindPolicy::kAuto, r, 5, many), many[r]);
  EXPECT_EQ(cpu_for_rank(BindPolicy::kCore, 1, 2, many), 1) << "core pins whatever the size";
}

TEST(CliCpuBinding, CoreWrapsAroundAndNoneNeverPins) {
  const std::vector<int> cpus = {0, 1};
  const int expected[] = {0, 1, 0, 1, 0};
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(cpu_for_rank(BindPolicy::kCore, r, 5, cpus), expected[r]);
    EXPECT_EQ(cpu_for_rank(BindPolicy::kNone, r, 5, cpus), -1);
  }
  EXPECT_EQ(cpu_for_rank(BindPolicy::kCore, 0, 2, {}), -1) << "no CPU list: no pinning";
}

TEST(CliCpuBinding, AllowedCpusListsThisProcess) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  for (size_t i = 1; i < cpus.size(); ++i) EXPECT_LT(cpus[i - 1], cpus[i]);
}

}  // namespace
}  // namespace collie::cli
