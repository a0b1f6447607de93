#include "runtime/biased_mutex.h"

#include <sched.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/cpu_relax.h"
#include "runtime/membarrier.h"

namespace collie::detail {

bool BiasedMutex::membarrier_ready() { return detail::membarrier_ready(MembarrierScope::kProcess); }

void BiasedMutex::lock_slow() {
  mutex_.lock();
  exclude_owner(/*may_wait=*/true);
}

bool BiasedMutex::try_lock_slow() {
  if (!mutex_.try_lock()) return false;
  if (exclude_owner(/*may_wait=*/false)) return true;
  mutex_.unlock();  // not unlock(): the owner, inside, is the one holding
  return false;
}

bool BiasedMutex::exclude_owner(bool may_wait) {
  const void* self = me();
  if (!revoked_.load(std::memory_order_relaxed)) {
    // An owner's bias (never this thread's: it would not be here): revoke it.
    // The owner is outside, or inside without mutex_ (membarrier makes its
    // "inside" visible), or about to see `revoked_` and queue on mutex_.
    revoked_.store(true, std::memory_order_release);
    revocations_.store(revocations_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (!membarrier_ready() || !membarrier_now(MembarrierScope::kProcess)) {
      // Registered before the bias was granted, so this cannot fail; if the
      // kernel does, mutual exclusion cannot be proven: stop.
      std::fputs("collie: internal error: membarrier failed while revoking a BiasedMutex\n",
                 stderr);
      std::abort();
    }
  }
  // An owner revoked by this thread or an earlier one may still be inside (one
  // that gave up in try_lock did not wait). Its critical sections are short (a
  // group's submit, an engine pass); yield now and then in case it shares this core.
  for (unsigned spins = 1; owner_inside_.load(std::memory_order_acquire) != 0; ++spins) {
    if (!may_wait) return false;
    if (spins % 64 == 0) {
      sched_yield();
    } else {
      cpu_relax();
    }
  }
  if (streak_holder_ == self) {
    ++streak_;
  } else {
    streak_holder_ = self;
    streak_ = 1;
  }
  return true;
}

void BiasedMutex::unlock_slow() {
  // The first thread to take it, or after a revocation the same thread
  // bias_after_ times in a row, and nobody queued: it owns the mutex from now
  // on. A thread that finds it so revokes it (exclude_owner). (Without
  // membarrier, asked again only every bias_after_ holds.)
  if (bias_after_ != 0 && streak_ >= bias_at_ && streak_holder_ == me() && !mutex_.has_sleepers()) {
    streak_ = 0;
    bias_at_ = bias_after_;
    if (membarrier_ready()) {
      owner_.store(me(), std::memory_order_relaxed);
      revoked_.store(false, std::memory_order_release);
    }
  }
  mutex_.unlock();
}

}  // namespace collie::detail
