// FutexMutex: the mutex of the locks every call takes once or twice (a group's
// submit lock, the shm engine's progress lock).
//
// Like std::mutex (Lockable: use it with std::lock_guard), never spinning: a
// thread that finds it held sleeps on a futex until the holder leaves. It exists
// because glibc's pthread_mutex_lock and unlock go through the mutex type's
// dispatch, about 55 instructions a pair, where this takes about 10; both do the
// same two locked instructions when nobody waits. That is 5 % of an 8-byte
// all_reduce between two ranks (Intel Xeon VM: 390 -> 371 ns back to back).
//
// The algorithm is the second mutex of Ulrich Drepper's "Futexes Are Tricky":
// the word is 0 (free), 1 (held) or 2 (held, and a thread may be asleep on it),
// so an unlock makes a system call only when someone may be waiting. Lock and
// unlock are acquire and release operations on the word, which is all
// ThreadSanitizer needs to see the ordering they give.
//
//   FutexMutex mu;
//   { std::lock_guard<FutexMutex> lock(mu); ... }
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "runtime/futex.h"

namespace collie::detail {

class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void lock() {
    uint32_t seen = kFree;
    if (word_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire)) return;
    // Contended: mark the word as possibly slept on, then sleep until it is free.
    if (seen != kSleepers) seen = word_.exchange(kSleepers, std::memory_order_acquire);
    while (seen != kFree) {
      futex_wait(&word_, kSleepers, kSleepSliceNs);
      seen = word_.exchange(kSleepers, std::memory_order_acquire);
    }
  }

  bool try_lock() {
    uint32_t seen = kFree;
    return word_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire);
  }

  void unlock() {
    if (word_.exchange(kFree, std::memory_order_release) == kSleepers) futex_wake(&word_, 1);
  }

  // Whether a thread may be asleep waiting for this mutex (call it holding it).
  bool has_sleepers() const { return word_.load(std::memory_order_relaxed) == kSleepers; }

  // After unlocking a mutex that had sleepers: yields the CPU until another
  // thread holds it, at most `max_yields` times. A thread that locks again at
  // once in a loop would otherwise keep a woken waiter out (it finds the mutex
  // held again, and sleeps again).
  void let_a_sleeper_in(int max_yields) const {
    for (int i = 0; i < max_yields && word_.load(std::memory_order_relaxed) == kFree; ++i) {
      std::this_thread::yield();
    }
  }

 private:
  static constexpr uint32_t kFree = 0, kHeld = 1, kSleepers = 2;
  // Futex waits always carry a timeout (runtime/futex.h); a waiter whose slice
  // ends just looks again.
  static constexpr int64_t kSleepSliceNs = 1'000'000'000;
  std::atomic<uint32_t> word_{kFree};
};

}  // namespace collie::detail
