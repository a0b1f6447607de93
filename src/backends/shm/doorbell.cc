#include "backends/shm/doorbell.h"

#include <algorithm>

#include "runtime/coarse_clock.h"
#include "runtime/futex.h"
#include "runtime/membarrier.h"

namespace collie::detail {

// seq_cst on both sides: either the waker sees the sleeper (and wakes it), or the
// sleeper's later load of `count` sees the waker's increment (and does not sleep).
// For a parked sleeper the same holds of `drivers` and `async_pending`: the last
// driver leaving (its decrement, then a look at `async_pending`) and an operation
// posted meanwhile (its increment, then a ring that looks at `drivers`) cannot
// both miss the other.
void Doorbell::ring(Ring what) {
  count.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) != 0 ||
      (what != Ring::kStep &&
       (idle_sleepers.load(std::memory_order_seq_cst) != 0 ||
        (parked.load(std::memory_order_seq_cst) != 0 && parked_thread_listens(what))))) {
    futex_wake(&count, 1 << 30);
  }
}

void Doorbell::ring_step(bool registered) {
  if (!registered || unfenced_step_rings.load(std::memory_order_relaxed) == 0) {
    return ring(Ring::kStep);
  }
  // Only the compiler must keep the step's store before this load.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_relaxed) == 0) return;
  count.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(&count, 1 << 30);
}

bool Doorbell::parked_thread_listens(Ring what) const {
  // async_pending first: it shares the line of `parked`, which a loop of blocking
  // calls leaves alone, while `drivers` changes with every call.
  const bool async = async_pending.load(std::memory_order_seq_cst) != 0;
  if (!async && what == Ring::kBytes) return false;
  if (drivers.load(std::memory_order_seq_cst) != 0) return false;
  return async || what == Ring::kNudge ||
         coarse_now_ns() - drivers_left_ns.load(std::memory_order_relaxed) >= kParkedListensAfterNs;
}

void Doorbell::wake_all() {
  count.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(&count, 1 << 30);
}

Doorbell::Ticket Doorbell::prepare_wait(bool idle) {
  (idle ? idle_sleepers : sleepers).fetch_add(1, std::memory_order_seq_cst);
  // kStep rings that skip their barrier (ring_step) concern `sleepers` only.
  // A membarrier that fails (it was available when the owner registered, so it
  // should not) leaves the last such rings unordered: they are fenced from now
  // on, and this wait is cut short so that the pass after it sees their steps.
  bool unordered = false;
  if (!idle && unfenced_step_rings.load(std::memory_order_relaxed) != 0 &&
      !membarrier_now(MembarrierScope::kMachine)) {
    unfenced_step_rings.store(0, std::memory_order_relaxed);
    unordered = true;
  }
  return {count.load(std::memory_order_seq_cst), unordered};
}

void Doorbell::wait(uint32_t seen, int64_t timeout_ns) { futex_wait(&count, seen, timeout_ns); }

void Doorbell::wait(Ticket ticket, int64_t timeout_ns) {
  wait(ticket.seen, ticket.unordered ? std::min(timeout_ns, kUnorderedRingWaitNs) : timeout_ns);
}

void Doorbell::finish_wait(bool idle) {
  (idle ? idle_sleepers : sleepers).fetch_sub(1, std::memory_order_seq_cst);
}

uint32_t Doorbell::prepare_park() {
  parked.store(1, std::memory_order_seq_cst);
  return count.load(std::memory_order_seq_cst);
}

void Doorbell::finish_park() { parked.store(0, std::memory_order_seq_cst); }

}  // namespace collie::detail
