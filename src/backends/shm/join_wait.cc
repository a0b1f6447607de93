#include "backends/shm/join_wait.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "collie/errors.h"
#include "runtime/op_info.h"

namespace collie::detail {

void wait_for_join_stage(const ShmGroupConfig& cfg, const char* what,
                         const std::function<bool(int)>& ready,
                         const std::function<bool(int)>& dead) {
  using Clock = std::chrono::steady_clock;
  // Timeouts beyond ~30 years mean "never"; capped, the conversion to the clock's
  // integer ticks cannot overflow (COLLIE_TIMEOUT=1e300 or inf would).
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::min(cfg.timeout_seconds, 1e9)));
  const int n = static_cast<int>(cfg.world_ranks.size());
  auto sleep = std::chrono::microseconds(100);
  for (;;) {
    // Every peer's liveness, ready or not, before any readiness: a peer that
    // passed this stage and then died will never reach the next one, and the
    // ranks still missing here may never come (they may have failed on it).
    std::vector<int> died;
    for (int g = 0; g < n; ++g) {
      if (g != cfg.my_group_rank && dead(g)) died.push_back(g);
    }
    std::vector<int> missing;
    for (int g = 0; g < n; ++g) {
      if (g != cfg.my_group_rank && !ready(g))
        missing.push_back(cfg.world_ranks[static_cast<size_t>(g)]);
    }
    if (missing.empty()) return;
    const std::string where = std::string(what) + " of group '" + cfg.name + "' (ranks " +
                              rank_list(cfg.world_ranks) + ", job " + cfg.job_id + ")";
    if (!died.empty()) {
      std::vector<int> world;
      for (int g : died) world.push_back(cfg.world_ranks[static_cast<size_t>(g)]);
      throw CommError(where + ": rank(s) " + rank_list(world) + " died before joining");
    }
    if (Clock::now() > deadline) {
      throw TimeoutError(where + ": rank(s) " + rank_list(missing) + " did not join within " +
                         format_seconds(cfg.timeout_seconds) +
                         " (do all of them call it, with the same rank list?)");
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(10000));
  }
}

}  // namespace collie::detail
