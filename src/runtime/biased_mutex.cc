#include "runtime/biased_mutex.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "runtime/cpu_relax.h"

#if defined(__SANITIZE_THREAD__)
#define COLLIE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COLLIE_TSAN 1
#endif
#endif

namespace collie::detail {

namespace {
long membarrier(int command) { return syscall(SYS_membarrier, command, 0, 0); }
}  // namespace

bool BiasedMutex::membarrier_ready() {
#ifdef COLLIE_TSAN
  return false;
#else
  // Registration belongs to a process: a forked child registers again.
  static std::atomic<pid_t> ready_in{0};
  static std::atomic<pid_t> unavailable_in{0};
  const pid_t pid = getpid();
  if (ready_in.load(std::memory_order_acquire) == pid) return true;
  if (unavailable_in.load(std::memory_order_acquire) == pid) return false;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (ready_in.load(std::memory_order_acquire) == pid) return true;
  const long commands = membarrier(MEMBARRIER_CMD_QUERY);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
      membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    unavailable_in.store(pid, std::memory_order_release);
    return false;
  }
  ready_in.store(pid, std::memory_order_release);
  return true;
#endif
}

void BiasedMutex::lock_slow() {
  mutex_.lock();
  if (revoked_.load(std::memory_order_relaxed)) return;
  const void* owner = owner_.load(std::memory_order_relaxed);
  if (owner == nullptr) {
    // The first lock: this thread becomes the owner if others will be able to
    // revoke; otherwise nobody ever does.
    if (membarrier_ready()) {
      owner_.store(me(), std::memory_order_relaxed);
    } else {
      revoked_.store(true, std::memory_order_release);
    }
    return;  // held through mutex_ this once
  }
  // Another thread: revoke for good. The owner is either outside, or inside
  // without mutex_ (membarrier makes its "inside" visible), or about to see
  // `revoked_` and queue on mutex_, which this thread holds.
  revoked_.store(true, std::memory_order_release);
  if (!membarrier_ready() || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    // Registered when the owner was granted its bias, so this cannot fail; if
    // the kernel does, mutual exclusion cannot be proven: stop.
    std::fputs("collie: internal error: membarrier failed while revoking a BiasedMutex\n", stderr);
    std::abort();
  }
  // The owner's critical sections are short (a group's submit); bounded by its
  // leaving, yielding the core now and then in case it shares ours.
  for (unsigned spins = 1; owner_inside_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins % 64 == 0) {
      sched_yield();
    } else {
      cpu_relax();
    }
  }
}

}  // namespace collie::detail
