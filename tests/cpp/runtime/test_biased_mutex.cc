// BiasedMutex (src/runtime/biased_mutex.h): its owner locks without atomic
// read-modify-writes; a second thread revokes that for good, and from then on
// (and while it does) the two exclude each other as with any mutex.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/biased_mutex.h"
#include "runtime/cpu_relax.h"

namespace collie::detail {
namespace {

TEST(BiasedMutex, OneThreadNeverRevokesIt) {
  BiasedMutex mu;
  int counter = 0;
  for (int i = 0; i < 10000; ++i) {
    std::lock_guard<BiasedMutex> lock(mu);
    ++counter;
  }
  EXPECT_EQ(counter, 10000);
  // Revoked from the start only where no thread may own it.
  EXPECT_EQ(mu.revoked(), !BiasedMutex::membarrier_ready());
}

// The owner and a second thread increment one plain counter, a read and a
// write apart: any overlap of their critical sections loses increments. Each
// round starts with a new mutex, and the owner goes on until the other thread
// has made some of its increments, so the revocation and the ordinary mutex
// after it both meet an owner that is busy with it.
TEST(BiasedMutex, TheOwnerAndAnotherThreadExcludeEachOther) {
  constexpr int kRounds = 40;
  constexpr int kOtherIncrements = 2000;
  for (int round = 0; round < kRounds; ++round) {
    BiasedMutex mu;
    int counter = 0;
    std::atomic<bool> owned{false};
    std::atomic<int> other_made{0};
    auto increment = [&] {
      std::lock_guard<BiasedMutex> lock(mu);
      const int seen = counter;
      cpu_relax();
      counter = seen + 1;
    };
    int owner_made = 0;
    std::thread owner([&] {
      while (other_made.load(std::memory_order_acquire) < kOtherIncrements / 2) {
        increment();
        ++owner_made;
        owned.store(true, std::memory_order_release);
      }
    });
    while (!owned.load(std::memory_order_acquire)) std::this_thread::yield();
    std::thread other([&] {
      for (int i = 0; i < kOtherIncrements; ++i) {
        increment();
        other_made.fetch_add(1, std::memory_order_release);
      }
    });
    owner.join();
    other.join();
    ASSERT_EQ(counter, owner_made + kOtherIncrements) << "round " << round;
    EXPECT_TRUE(mu.revoked());
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
  EXPECT_TRUE(mu.revoked());
  // The owner locks through the ordinary mutex now.
  {
    std::lock_guard<BiasedMutex> again(mu);
    EXPECT_TRUE(mu.revoked());
  }
}

}  // namespace
}  // namespace collie::detail
