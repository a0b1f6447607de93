// Asymmetric fences: membarrier(2) for the rare side of a Dekker-style handshake.
//
// Two threads that each store a word and then load the other's need a full
// barrier between the two on both sides, or each may miss the other's store (x86
// lets a load pass an earlier store to another address). When one side runs on
// every call and the other rarely, the rare side can pay for both: the frequent
// side orders its store and load for the compiler only, and the rare side, after
// its store, has the kernel make every running thread in scope execute a full
// barrier. After that either the frequent side's store is visible to the rare
// side's load, or the frequent side's later load sees the rare side's store.
//
//   hot path:   flag.store(1, relaxed); signal fence; if (other.load() != 0) slow_path();
//   rare path:  other.store(1, seq_cst); membarrier_now(MembarrierScope::kMachine);
//               if (flag.load() == 0) ... the hot side will see `other`
//
// kProcess reaches this process's threads (BiasedMutex); kMachine every thread of
// the processes that registered for it (the shm engine's doorbells, whose peers
// are other processes). A hot side may skip its barrier only if its process is
// registered in that scope (membarrier_ready) and the rare side issues one.
// Without membarrier (a kernel before 4.16, a seccomp filter) and under
// ThreadSanitizer, which cannot see the ordering it gives, neither is ready and
// callers keep their barriers.
#pragma once

namespace collie::detail {

enum class MembarrierScope {
  kProcess,  // MEMBARRIER_CMD_PRIVATE_EXPEDITED: this process's threads
  kMachine,  // MEMBARRIER_CMD_GLOBAL_EXPEDITED: every registered process's
};

// Whether this process may rely on membarrier_now(scope), registering it for the
// scope on first use (and again in a forked child). A system call the first
// time; afterwards a getpid() and two loads.
bool membarrier_ready(MembarrierScope scope);

// Makes every running thread in `scope` execute a full memory barrier before it
// returns. False if the kernel refused (the caller must then not rely on it).
// About 1 us with the other CPUs idle, tens of microseconds on a VM whose other
// vCPUs run registered threads.
bool membarrier_now(MembarrierScope scope);

}  // namespace collie::detail
