// membarrier_ready and membarrier_now (src/runtime/membarrier.h): ready in a
// scope exactly when the kernel offers that scope's command (never under
// ThreadSanitizer), a barrier issued whenever ready, and a forked child
// registered again on its own.
#include <gtest/gtest.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/membarrier.h"

#if defined(__SANITIZE_THREAD__)
#define COLLIE_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COLLIE_TEST_TSAN 1
#endif
#endif

namespace collie::detail {
namespace {

// What the kernel offers for the scope, asked directly.
bool kernel_offers(MembarrierScope scope) {
#ifdef COLLIE_TEST_TSAN
  (void)scope;
  return false;
#else
  const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  const long wanted = scope == MembarrierScope::kProcess ? MEMBARRIER_CMD_PRIVATE_EXPEDITED
                                                         : MEMBARRIER_CMD_GLOBAL_EXPEDITED;
  return commands > 0 && (commands & wanted) != 0;
#endif
}

TEST(Membarrier, ReadyInAScopeExactlyWhenTheKernelOffersItAndThenIssuesBarriers) {
  for (MembarrierScope scope : {MembarrierScope::kProcess, MembarrierScope::kMachine}) {
    const bool offered = kernel_offers(scope);
    EXPECT_EQ(membarrier_ready(scope), offered) << static_cast<int>(scope);
    EXPECT_EQ(membarrier_ready(scope), offered) << "asked again";
    if (offered) {
      EXPECT_TRUE(membarrier_now(scope)) << static_cast<int>(scope);
    }
  }
}

TEST(Membarrier, AForkedChildRegistersOnItsOwn) {
  const bool offered = kernel_offers(MembarrierScope::kMachine);
  ASSERT_EQ(membarrier_ready(MembarrierScope::kMachine), offered);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool ok = membarrier_ready(MembarrierScope::kMachine) == offered &&
                    (!offered || membarrier_now(MembarrierScope::kMachine));
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace collie::detail
