// Doorbell: how a rank's progress engine sleeps until something concerns it.
//
// Each process has one doorbell in its world segment. Anyone who publishes data
// or a flag that process may be waiting for (a peer's step flag, bytes in a p2p
// ring, a new local operation) rings it. The engine sleeps on it with a futex
// when a whole progress pass made no progress. It is an event count: the sleeper
// announces itself before re-checking, so a ring can never be lost, and a ring
// costs only an atomic increment unless the owner is actually asleep (a step
// ring, ring_step, from a process registered for membarriers: two loads).
//
//   waiter: t = bell.prepare_wait(); if (!anything_to_do()) bell.wait(t, ns);
//   bell.finish_wait(); waker:  publish(data); bell.ring(Ring::kBytes);
#pragma once

#include <atomic>
#include <cstdint>

namespace collie::detail {

// What a ring announces, which decides whom it wakes (a thread with work in
// flight wakes for every ring).
enum class Ring {
  // A step flag or a message to oneself: concerns only threads with work in
  // flight. Keeping these from waking idle progress threads matters on a 2-core
  // machine, where each needless wake-up can cost the rank doing real work its
  // time slice.
  kStep,
  // p2p bytes or a new local operation: an idle progress thread drains them, and
  // a parked one does if asynchronous operations are pending and no caller drives.
  kBytes,
  // Bytes whose sender waits for the owner to act (a pulled message to read, a
  // full ring): as kBytes, and a parked progress thread also wakes once no caller
  // has driven for kParkedListensAfterNs.
  kAwaited,
  // A sender that has waited for the owner a while says so again: as kBytes, and
  // a parked progress thread also wakes whenever no caller drives.
  kNudge,
};

// A parked progress thread stands aside while the owner's callers drive the
// engine themselves (`drivers`), and after they leave while nothing needs it: a
// caller is often back within microseconds, and answering every p2p ring between
// back-to-back calls cost a context switch per call (2 ranks, send_recv of 2 MiB:
// a wake-up per call, 143 -> 210 us). The last caller to leave wakes it if it
// leaves asynchronous work behind (engine.cc). Parked, the thread used to wake on
// a 1 ms timer, which preempted the caller on its core mid-call (2 ranks,
// send_recv of 8 MiB: 622 -> 583 us without those wake-ups).
inline constexpr int64_t kParkedListensAfterNs = 1'000'000;

struct Doorbell {
  alignas(64) std::atomic<uint32_t> count{0};
  // Who sleeps, on one line that only the owner writes and every ring reads (one
  // cache miss per ring, not one per word).
  alignas(64) std::atomic<uint32_t> sleepers{0};  // wake on any ring
  std::atomic<uint32_t> idle_sleepers{0};         // wake on all but kStep rings
  std::atomic<uint32_t> parked{0};
  // Set by the owner (enable_unfenced_step_rings) when its sleepers make every
  // registered process execute a full barrier before they sleep: a kStep ring
  // from a registered process then needs none of its own (ring_step).
  std::atomic<uint32_t> unfenced_step_rings{0};
  // Read by rings while the thread is parked; a loop of blocking calls does not
  // write it.
  alignas(64) std::atomic<uint64_t> async_pending{0};  // the owner's asynchronous operations
  // Written on every driven call; read by rings only while the thread is parked.
  alignas(64) std::atomic<uint32_t> drivers{0};  // the owner's threads driving its engine
  std::atomic<int64_t> drivers_left_ns{0};       // coarse clock, when the last one left

  void ring(Ring what);
  // ring(Ring::kStep) after this rank published a step. A ring's full barrier
  // (between the step's store and the look at `sleepers`) waits for that store
  // to reach the peers' cache: a small call with nothing to wait for (an eager
  // rooted call, step_op.h) spent half its time in it (perf, 2 ranks). Where
  // the caller's process is registered for machine-wide membarriers
  // (`registered`) and the owner's sleepers issue one (unfenced_step_rings),
  // the ring is two loads instead: a sleeper's membarrier makes either this
  // rank's step visible to its last look or its own count in `sleepers`
  // visible here (runtime/membarrier.h). The engine does so only where ranks
  // outnumber cores (engine.cc), where it measured faster for every rank.
  void ring_step(bool registered);
  // The owner, once, if it rings so and membarrier_ready(MembarrierScope::kMachine).
  void enable_unfenced_step_rings() { unfenced_step_rings.store(1, std::memory_order_release); }
  // A waiter's announcement (prepare_wait): the ring count it saw, and whether
  // rings may have gone by unordered (a membarrier failed), in which case its
  // wait lasts at most kUnorderedRingWaitNs, time for their steps to arrive.
  struct Ticket {
    uint32_t seen;
    bool unordered;
  };
  static constexpr int64_t kUnorderedRingWaitNs = 100'000;
  Ticket prepare_wait(bool idle = false);
  void wait(Ticket ticket, int64_t timeout_ns);
  void wait(uint32_t seen, int64_t timeout_ns);
  void finish_wait(bool idle = false);
  // The progress thread parks: prepare_park(), then, if drivers are still there,
  // wait(seen, ns); finish_park() after.
  uint32_t prepare_park();
  void finish_park();
  // Wakes every sleeper, parked ones included.
  void wake_all();

 private:
  bool parked_thread_listens(Ring what) const;
};

}  // namespace collie::detail
