// Stress: 4 ranks issue thousands of random operations (op, dtype, size, group
// including unsorted and single-rank sub-groups, root, async or not) from one seed,
// and check every result against a reference computed locally (stress_plan.h).
//
// COLLIE_STRESS_SEED and COLLIE_STRESS_OPS override the seed and the length
// (COLLIE_STRESS_PERCENT scales the length); a failure message names the seed and
// the operation, which replays it exactly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rank_runner.h"
#include "stress_run.h"

namespace collie::stress {
namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

struct Config {
  uint64_t seed;
  int ops;
  int64_t scale;  // size multiplier (stress_plan.h)
  std::vector<std::pair<std::string, std::string>> env;
};

void run_stress(Config c) {
  c.seed = env_or("COLLIE_STRESS_SEED", c.seed);
  // Sanitizer runs take a percentage of the default length (scripts/sanitize.sh).
  c.ops = static_cast<int>(static_cast<uint64_t>(c.ops) * env_or("COLLIE_STRESS_PERCENT", 100) / 100);
  c.ops = static_cast<int>(env_or("COLLIE_STRESS_OPS", static_cast<uint64_t>(c.ops)));
  const int kRanks = 4;
  const auto groups = stress_groups(kRanks);
  const auto plan = make_plan(c.seed, c.ops, groups, c.scale);
  testing::RunOptions o;
  o.collie_timeout_seconds = 60;
  o.deadline_seconds = 400;
  o.env = c.env;
  const auto start = std::chrono::steady_clock::now();
  bool ok = testing::run_ranks(kRanks, [&](int rank) {
    RunStats st = run_plan(rank, groups, plan);
    std::printf("rank %d: %d ops issued (%d async), %d results checked\n", rank, st.issued, st.async,
                st.checked);
  }, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("stress: seed %llu, %d ops in %.1f s\n", static_cast<unsigned long long>(c.seed), c.ops, s);
  EXPECT_TRUE(ok) << "replay with COLLIE_STRESS_SEED=" << c.seed << " COLLIE_STRESS_OPS=" << c.ops;
}

// 16 KiB staging slots and rings: a quarter of the operations move their data in
// several chunks, and p2p messages wrap around their rings.
TEST(Stress, SmallSlotsManyOperations) {
  run_stress({20240607, 20000, 1, {{"COLLIE_SHM_SLOT_BYTES", "16K"}, {"COLLIE_P2P_RING_BYTES", "16K"}}});
}

// The default 1 MiB slots and rings with sizes 16x larger (up to 1.6M elements).
TEST(Stress, DefaultSlotsLargerTensors) { run_stress({7, 1500, 16, {}}); }

// The smallest slots and rings (4 KiB), with waiting threads spinning before they
// sleep (COLLIE_SPIN_US; off by default when ranks outnumber cores).
TEST(Stress, TinySlotsWithSpinning) {
  run_stress({99, 4000, 1,
              {{"COLLIE_SHM_SLOT_BYTES", "4096"}, {"COLLIE_P2P_RING_BYTES", "4096"},
               {"COLLIE_SPIN_US", "100"}}});
}

}  // namespace
}  // namespace collie::stress
