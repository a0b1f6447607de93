// FutexMutex (src/runtime/futex_mutex.h): mutual exclusion under contention
// (every increment of a plain counter survives, which ThreadSanitizer also
// checks), try_lock, a waiter that sleeps until the holder unlocks, and a holder
// that lets such a waiter in before it locks again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/futex_mutex.h"

namespace collie::detail {
namespace {

TEST(FutexMutex, ContendedIncrementsAreNeverLost) {
  FutexMutex mu;
  int64_t counter = 0;  // plain: only the mutex orders the threads' updates
  constexpr int kThreads = 4, kIncrements = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        std::lock_guard<FutexMutex> lock(mu);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIncrements);
}

TEST(FutexMutex, TryLockFailsWhileHeldAndSucceedsOnceFree) {
  FutexMutex mu;
  ASSERT_TRUE(mu.try_lock());
  bool other_got_it = true;
  std::thread([&] { other_got_it = mu.try_lock(); }).join();
  EXPECT_FALSE(other_got_it);
  mu.unlock();
  std::thread([&] {
    other_got_it = mu.try_lock();
    if (other_got_it) mu.unlock();
  }).join();
  EXPECT_TRUE(other_got_it);
}

TEST(FutexMutex, AWaiterSleepsUntilTheHolderUnlocks) {
  using namespace std::chrono_literals;
  FutexMutex mu;
  std::atomic<bool> acquired{false};
  mu.lock();
  std::thread waiter([&] {
    std::lock_guard<FutexMutex> lock(mu);
    acquired.store(true);
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(acquired.load());  // still held: the waiter is asleep, not through
  mu.unlock();
  waiter.join();
  EXPECT_TRUE(acquired.load());
}

// The progress thread's hand-off (engine.cc): a holder sees that a thread sleeps
// on the mutex, unlocks, and lets it in; when let_a_sleeper_in returns, the other
// thread holds the mutex, so the holder's next lock would wait behind it instead
// of taking the mutex straight back (as an unfair mutex lets it).
TEST(FutexMutex, AHolderLetsASleepingWaiterInBeforeLockingAgain) {
  using namespace std::chrono_literals;
  for (int round = 0; round < 20; ++round) {
    FutexMutex mu;
    std::atomic<bool> release{false};
    mu.lock();
    EXPECT_FALSE(mu.has_sleepers());
    std::thread waiter([&] {
      std::lock_guard<FutexMutex> lock(mu);
      while (!release.load()) std::this_thread::sleep_for(1ms);
    });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!mu.has_sleepers() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(mu.has_sleepers()) << "the waiter never went to sleep on the mutex";
    mu.unlock();
    mu.let_a_sleeper_in(1'000'000);
    const bool taken_back = mu.try_lock();
    EXPECT_FALSE(taken_back) << "round " << round << ": the waiter was not let in";
    if (taken_back) mu.unlock();
    release.store(true);
    waiter.join();
  }
}

}  // namespace
}  // namespace collie::detail
