// FutexMutex (src/runtime/futex_mutex.h): mutual exclusion under contention
// (every increment of a plain counter survives, which ThreadSanitizer also
// checks), try_lock, and a waiter that sleeps until the holder unlocks.
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

}  // namespace
}  // namespace collie::detail
