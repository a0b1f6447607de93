// BiasedMutex: a mutex that the one thread using it takes without an atomic
// read-modify-write.
//
// A group's calls are almost always made by one thread, yet every call takes the
// group's submit lock, and a FutexMutex costs two locked instructions a call
// (compare-exchange, exchange): full barriers that wait for the caller's
// earlier stores to reach the cache. 2 ranks, 8 B all_reduce back to back,
// AMD Zen 5 VM, alternating runs: 0.539-0.647 -> 0.508-0.626 us a call (a build
// without the lock at all, to bound the gain: 0.466-0.479 against 0.506-0.553).
//
// So the first thread to lock a BiasedMutex becomes its owner, and the owner
// locks with a store ("inside") and a load ("revoked?"), and unlocks with a
// store. Those cannot be ordered against another thread without a barrier, so
// the other thread pays for both: the first time any other thread locks, it
// takes the FutexMutex, marks the bias revoked, and calls
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every running thread
// of the process execute a full memory barrier. After it returns, either the
// owner's "inside" store is visible (and the revoker waits for the owner to
// leave) or the owner's next load of "revoked" sees it (and the owner takes the
// FutexMutex like everyone). From then on every thread, owner included, uses
// the FutexMutex: a mutex shared by threads stays an ordinary one. A revocation
// costs one system call (about 1 us, 20 us with a thread on every vCPU of a VM).
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
  BiasedMutex() = default;
  BiasedMutex(const BiasedMutex&) = delete;
  BiasedMutex& operator=(const BiasedMutex&) = delete;

  void lock() {
    if (!revoked_.load(std::memory_order_acquire) &&
        owner_.load(std::memory_order_relaxed) == me()) {
      owner_inside_.store(1, std::memory_order_relaxed);
      // The StoreLoad order between these two is what a revoker's membarrier
      // supplies; the compiler must not swap them either.
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (!revoked_.load(std::memory_order_acquire)) {
        owner_holds_ = true;
        return;
      }
      owner_inside_.store(0, std::memory_order_release);  // revoked meanwhile
    }
    lock_slow();
  }

  void unlock() {
    if (owner_holds_) {
      owner_holds_ = false;
      owner_inside_.store(0, std::memory_order_release);
      return;
    }
    mutex_.unlock();
  }

  // Whether a thread other than the owner has ever locked it (or no thread can
  // own it): it is an ordinary FutexMutex now. For tests.
  bool revoked() const { return revoked_.load(std::memory_order_acquire); }

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
  void lock_slow();

  std::atomic<const void*> owner_{nullptr};  // set once, by the first lock
  std::atomic<uint32_t> owner_inside_{0};    // the owner holds it without mutex_
  std::atomic<bool> revoked_{false};
  bool owner_holds_ = false;  // read and written only by the holder
  FutexMutex mutex_;
};

}  // namespace collie::detail
