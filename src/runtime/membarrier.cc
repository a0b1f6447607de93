#include "runtime/membarrier.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

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

struct Commands {
  int issue, register_for;
};
Commands commands_of(MembarrierScope scope) {
  return scope == MembarrierScope::kProcess
             ? Commands{MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED}
             : Commands{MEMBARRIER_CMD_GLOBAL_EXPEDITED, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED};
}

// Per scope: the process that registered, or found it unavailable.
struct Registration {
  std::atomic<pid_t> ready_in{0};
  std::atomic<pid_t> unavailable_in{0};
};

}  // namespace

bool membarrier_ready(MembarrierScope scope) {
#ifdef COLLIE_TSAN
  (void)scope;
  return false;
#else
  // Registration belongs to a process: a forked child registers again.
  static Registration registrations[2];
  Registration& r = registrations[static_cast<int>(scope)];
  const pid_t pid = getpid();
  if (r.ready_in.load(std::memory_order_acquire) == pid) return true;
  if (r.unavailable_in.load(std::memory_order_acquire) == pid) return false;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (r.ready_in.load(std::memory_order_acquire) == pid) return true;
  const Commands c = commands_of(scope);
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & c.issue) == 0 || membarrier(c.register_for) != 0) {
    r.unavailable_in.store(pid, std::memory_order_release);
    return false;
  }
  r.ready_in.store(pid, std::memory_order_release);
  return true;
#endif
}

bool membarrier_now(MembarrierScope scope) { return membarrier(commands_of(scope).issue) == 0; }

}  // namespace collie::detail
