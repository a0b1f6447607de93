// BiasedMutex (src/runtime/biased_mutex.h): a thread that takes it often
// enough in a row becomes its owner and takes it without atomic
// read-modify-writes; another thread revokes that, and the two exclude each
// other throughout, the revocation included.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/biased_mutex.h"
#include "runtime/cpu_relax.h"

namespace collie::detail {
namespace {

TEST(BiasedMutex, TheFirstThreadOwnsItAndAnotherStreakRebiasesIt) {
  BiasedMutex mu(16);
  int counter = 0;
  for (int i = 0; i < 1000; ++i) {
    std::lock_guard<BiasedMutex> lock(mu);
    ++counter;
  }
  // Owned only where membarrier can revoke it (not under ThreadSanitizer).
  const bool can_bias = BiasedMutex::membarrier_ready();
  EXPECT_EQ(mu.biased(), can_bias);
  EXPECT_EQ(mu.revocations(), 0u);
  // Another thread revokes it, then needs 16 holds in a row to own it.
  std::thread([&] {
    for (int i = 0; i < 15; ++i) {
      std::lock_guard<BiasedMutex> lock(mu);
      ++counter;
    }
    EXPECT_FALSE(mu.biased());
    { std::lock_guard<BiasedMutex> sixteenth(mu); }
    EXPECT_EQ(mu.biased(), can_bias);
  }).join();
  EXPECT_EQ(mu.revocations(), can_bias ? 1u : 0u);
  EXPECT_EQ(counter, 1015);
  // A mutex that never biases.
  BiasedMutex never(0);
  for (int i = 0; i < 100; ++i) {
    std::lock_guard<BiasedMutex> lock(never);
  }
  EXPECT_FALSE(never.biased());
}

// Two threads increment one plain counter, a read and a write apart, in bursts
// with pauses between them: any overlap of their critical sections loses
// increments. A burst is longer than the streak that makes a thread the
// owner, so the bias passes back and forth, each pass a revocation that meets
// an owner busy with the mutex.
TEST(BiasedMutex, ThreadsExcludeEachOtherWhileTheBiasMoves) {
  constexpr int kBursts = 1000;
  constexpr int kBurst = 40;
  BiasedMutex mu(8);
  int counter = 0;
  auto work = [&] {
    for (int b = 0; b < kBursts; ++b) {
      for (int i = 0; i < kBurst; ++i) {
        std::lock_guard<BiasedMutex> lock(mu);
        const int seen = counter;
        cpu_relax();
        counter = seen + 1;
      }
      for (int i = 0; i < 50; ++i) cpu_relax();
      if (b % 8 == 0) std::this_thread::yield();
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(counter, 2 * kBursts * kBurst);
  if (BiasedMutex::membarrier_ready()) {
    EXPECT_GT(mu.revocations(), 0u);
  } else {
    EXPECT_EQ(mu.revocations(), 0u);
  }
}

// A thread that revokes while the owner is inside waits until it leaves, and
// then sees what the owner wrote inside.
TEST(BiasedMutex, RevokingWaitsForTheOwnerToLeave) {
  BiasedMutex mu;
  { std::lock_guard<BiasedMutex> first(mu); }  // this thread owns it now
  std::atomic<bool> other_started{false};
  bool owner_left = false;  // written inside the owner's critical section
  bool other_saw_owner_left = false;
  mu.lock();
  std::thread other([&] {
    other_started.store(true, std::memory_order_release);
    std::lock_guard<BiasedMutex> lock(mu);
    other_saw_owner_left = owner_left;
  });
  while (!other_started.load(std::memory_order_acquire)) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  owner_left = true;
  mu.unlock();
  other.join();
  EXPECT_TRUE(other_saw_owner_left);
  EXPECT_EQ(mu.revocations(), BiasedMutex::membarrier_ready() ? 1u : 0u);
}

// Whether another thread's try_lock gets `mu` (it unlocks it again at once).
bool try_lock_from_another_thread(BiasedMutex& mu) {
  bool got = false;
  std::thread([&] {
    got = mu.try_lock();
    if (got) mu.unlock();
  }).join();
  return got;
}

// try_lock by another thread while the owner is inside fails at once (the
// revocation stands), and succeeds once the owner has left.
TEST(BiasedMutex, TryLockDoesNotWaitForAnOwnerInside) {
  BiasedMutex mu;
  { std::lock_guard<BiasedMutex> first(mu); }
  mu.lock();
  EXPECT_FALSE(try_lock_from_another_thread(mu));
  EXPECT_FALSE(mu.biased());
  mu.unlock();
  EXPECT_TRUE(try_lock_from_another_thread(mu));
  // The former owner takes the FutexMutex now, and excludes others with it.
  mu.lock();
  EXPECT_FALSE(try_lock_from_another_thread(mu));
  mu.unlock();
}

}  // namespace
}  // namespace collie::detail
