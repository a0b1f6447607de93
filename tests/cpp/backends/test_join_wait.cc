// wait_for_join_stage with fake peers: when it returns, when it names dead ranks,
// when it times out. Peers change state at given "observations" (every call of
// ready() or dead() is one), which models a peer acting between two reads.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "backends/shm/join_wait.h"
#include "collie/errors.h"

namespace collie::detail {
namespace {

// This rank is group rank 2 of world ranks [4, 5, 6].
ShmGroupConfig three_ranks(double timeout_seconds = 5) {
  ShmGroupConfig cfg;
  cfg.job_id = "job";
  cfg.name = "g";
  cfg.world_ranks = {4, 5, 6};
  cfg.my_group_rank = 2;
  cfg.timeout_seconds = timeout_seconds;
  return cfg;
}

// Group rank 1 passed the stage (so it was ready) and then exited; group rank 0
// became ready before that exit, as it must have for rank 1 to pass. Whatever
// the moment T of both, between any two reads, the wait returns: a dead peer
// that is not in the way is not an error.
TEST(JoinWait, APeerThatPassedTheStageAndExitedDoesNotFailTheOthers) {
  for (int t = 0; t < 24; ++t) {
    int observation = 0;
    auto ready = [&](int g) { return g == 1 || observation++ >= t; };
    auto dead = [&](int g) { return observation++ >= t && g == 1; };
    EXPECT_NO_THROW(wait_for_join_stage(three_ranks(), "joining", ready, dead))
        << "peers acting at observation " << t;
  }
}

TEST(JoinWait, ReturnsOnceEveryPeerIsReady) {
  int rounds = 0;
  auto ready = [&](int g) {
    if (g == 0) ++rounds;
    return g == 1 || rounds > 3;
  };
  auto dead = [](int) { return false; };
  wait_for_join_stage(three_ranks(), "joining", ready, dead);
  EXPECT_EQ(rounds, 4);
}

TEST(JoinWait, ADeadPeerThatIsNotReadyFailsAtOnceNamingItsWorldRank) {
  auto ready = [](int g) { return g == 0; };
  auto dead = [](int g) { return g == 1; };
  const auto start = std::chrono::steady_clock::now();
  try {
    wait_for_join_stage(three_ranks(300), "joining", ready, dead);
    FAIL() << "no error";
  } catch (const CommError& e) {
    EXPECT_STREQ(e.what(),
                 "joining of group 'g' (ranks [4, 5, 6], job job): rank(s) [5] died "
                 "before joining");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60))
      << "did not wait for the deadline";
}

TEST(JoinWait, ALivePeerThatNeverComesTimesOutNamingIt) {
  auto ready = [](int g) { return g == 1; };
  auto dead = [](int) { return false; };
  const auto start = std::chrono::steady_clock::now();
  try {
    wait_for_join_stage(three_ranks(0.05), "joining", ready, dead);
    FAIL() << "no error";
  } catch (const TimeoutError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rank(s) [4] did not join within"), std::string::npos) << msg;
    EXPECT_NE(msg.find("same rank list"), std::string::npos) << msg;
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
}

}  // namespace
}  // namespace collie::detail
