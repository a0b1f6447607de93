// barrier: nobody leaves before everybody has entered. Checked with counters in memory
// shared by the forked ranks (outside collie): each rank increments the round's counter
// (after a rank-dependent delay), enters the barrier, and must then see all arrivals.
#include <atomic>
#include <new>
#include <chrono>
#include <thread>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

constexpr int kRounds = 20;

struct Arrivals {
  std::atomic<int> count[kRounds];
};

class BarrierWorld : public ::testing::TestWithParam<int> {};

TEST_P(BarrierWorld, NobodyLeavesEarly) {
  const int n = GetParam();
  SharedMemory shared(sizeof(Arrivals));
  auto* arrivals = new (shared.data()) Arrivals{};
  run_ranks(n, [n, arrivals](int rank) {
    for (int round = 0; round < kRounds; ++round) {
      // The late rank changes every round.
      if (rank == round % n) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      arrivals->count[round].fetch_add(1);
      barrier();
      RCHECK_EQ(arrivals->count[round].load(), n) << "round " << round << ": left the barrier early";
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, BarrierWorld, ::testing::Values(1, 2, 3, 4), world_size_name);

// A barrier in an unsorted sub-group waits for its members only.
TEST(Barrier, SubGroupWaitsForMembersOnly) {
  SharedMemory shared(sizeof(Arrivals));
  auto* arrivals = new (shared.data()) Arrivals{};
  run_ranks(4, [arrivals](int rank) {
    const std::vector<int> trio = {2, 0, 3};
    if (index_in(trio, rank) < 0) return;  // rank 1 never takes part
    create_group("barrier_trio", trio);
    for (int round = 0; round < kRounds; ++round) {
      if (rank == trio[static_cast<size_t>(round % 3)]) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      arrivals->count[round].fetch_add(1);
      barrier("barrier_trio");
      RCHECK_EQ(arrivals->count[round].load(), 3) << "round " << round;
    }
  });
}

TEST(Barrier, Errors) {
  run_ranks(2, [](int) {
    SoftChecks soft;
    SOFT_THROWS_DERIVED(soft, barrier("no_such_group"), collie::Error, "barrier", "no_such_group");
    soft.finish();
    barrier();
  });
}

}  // namespace
}  // namespace collie::testing
