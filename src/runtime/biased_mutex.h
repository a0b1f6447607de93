// BiasedMutex: a mutex that the one thread using it takes without an atomic
// read-modify-write.
//
// Every call takes its group's submit lock, almost always from the same
// thread, and a FutexMutex costs two locked instructions (compare-exchange,
// exchange) a hold: full barriers that wait for the caller's earlier stores to
// reach the cache. 2 ranks, 8 B all_reduce back to back, AMD Zen 5 VM,
// alternating runs, the submit lock biased: 0.539-0.647 -> 0.508-0.626 us a
// call. (The shm engine's progress lock, biased too, measured no better for
// all_reduce and made an 8 B send_recv after a barrier slower:
// docs/performance_history.md.)
//
// The first thread to take a BiasedMutex becomes its owner, and after a
// revocation (below) the next thread to take it `bias_after` times in a row
// with nobody queued (`bias_after` 0: no thread ever). The owner locks with a
// store ("inside") and a load ("revoked?") and unlocks with a store.
// Those cannot be ordered against another thread without a barrier, so the
// other thread pays for both: it takes the FutexMutex, marks the bias revoked
// and calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every
// running thread of the process execute a full memory barrier. After it
// returns, either the owner's "inside" store is visible (and the revoker waits
// for the owner to leave) or the owner's next load of "revoked" sees it (and
// the owner queues on the FutexMutex like everyone). A revocation costs one
// system call (about 1 us, 20 us with a thread on every vCPU of a VM), at most
// once per `bias_after` holds: a mutex that threads share stays a FutexMutex.
//
// Without membarrier (a kernel before 4.14, a seccomp filter) and under
// ThreadSanitizer (which cannot see the ordering membarrier gives), no thread
// ever becomes the owner: it is a FutexMutex.
//
//   BiasedMutex mu;
//   { std::lock_guard<BiasedMutex> lock(mu); ... }
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "runtime/futex_mutex.h"

namespace collie::detail {

class BiasedMutex {
 public:
  // Holds in a row by one thread that make it the owner after a revocation.
  static constexpr uint32_t kBiasAfter = 1024;

  explicit BiasedMutex(uint32_t bias_after = kBiasAfter) : bias_after_(bias_after) {}
  BiasedMutex(const BiasedMutex&) = delete;
  BiasedMutex& operator=(const BiasedMutex&) = delete;

  void lock() {
    if (!try_owner_lock()) lock_slow();
  }

  // Fails only if another thread holds it (or the owner is inside while this
  // thread revokes: that revocation stands).
  bool try_lock() { return try_owner_lock() || try_lock_slow(); }

  void unlock() {
    if (owner_holds_) {
      owner_holds_ = false;
      owner_inside_.store(0, std::memory_order_release);
      return;
    }
    unlock_slow();
  }

  // Whether a thread may be asleep waiting for it (call it holding it). A
  // thread that revokes the owner's bias waits without sleeping.
  bool has_sleepers() const { return mutex_.has_sleepers(); }
  // FutexMutex::let_a_sleeper_in.
  void let_a_sleeper_in(int max_yields) const { mutex_.let_a_sleeper_in(max_yields); }

  // Whether some thread owns it now, and how many times a bias was revoked.
  // For tests.
  bool biased() const { return !revoked_.load(std::memory_order_acquire); }
  uint64_t revocations() const { return revocations_.load(std::memory_order_relaxed); }

  // Whether membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is available to this
  // process (registering it on first use, and again in a forked child).
  static bool membarrier_ready();

 private:
  // This thread's token, unique among live threads: its thread pointer (one
  // instruction on x86-64), or pthread_self().
  static const void* me() {
#if defined(__x86_64__) && !defined(__clang__) && __GNUC__ >= 11
    return __builtin_thread_pointer();
#else
    return reinterpret_cast<const void*>(pthread_self());
#endif
  }

  bool try_owner_lock() {
    if (revoked_.load(std::memory_order_acquire) ||
        owner_.load(std::memory_order_relaxed) != me()) {
      return false;
    }
    owner_inside_.store(1, std::memory_order_relaxed);
    // The StoreLoad order between these two is what a revoker's membarrier
    // supplies; the compiler must not swap them either.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (!revoked_.load(std::memory_order_acquire)) {
      owner_holds_ = true;
      return true;
    }
    owner_inside_.store(0, std::memory_order_release);  // revoked meanwhile
    return false;
  }

  void lock_slow();
  bool try_lock_slow();
  // Holding mutex_: revokes an owner's bias, then waits for the owner to be
  // outside (false at once instead if !may_wait and it is inside).
  bool exclude_owner(bool may_wait);
  void unlock_slow();

  // The owner while revoked_ is false. Both change only under mutex_: owner_
  // first, then revoked_ (release), so a thread that sees revoked_ false sees
  // the owner that goes with it.
  std::atomic<const void*> owner_{nullptr};
  std::atomic<bool> revoked_{true};
  std::atomic<uint32_t> owner_inside_{0};  // the owner holds it without mutex_
  bool owner_holds_ = false;  // read and written only by the holder
  const uint32_t bias_after_;
  const void* streak_holder_ = nullptr;   // under mutex_: who took it last,
  uint32_t streak_ = 0;                   // and how many times in a row;
  uint32_t bias_at_ = 1;                  // the streak that biases it next
  std::atomic<uint64_t> revocations_{0};  // written under mutex_
  FutexMutex mutex_;
};

}  // namespace collie::detail
