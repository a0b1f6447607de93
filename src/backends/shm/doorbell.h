// Doorbell: how a rank's progress engine sleeps until something concerns it.
//
// Each process has one doorbell in its world segment. Anyone who publishes data
// or a flag that process may be waiting for (a peer's step flag, bytes in a p2p
// ring, a new local operation) rings it. The engine sleeps on it with a futex
// when a whole progress pass made no progress. It is an event count: the sleeper
// announces itself before re-checking, so a ring can never be lost, and a ring
// costs only an atomic increment unless the owner is actually asleep.
//
//   waiter: seen = bell.prepare_wait(); if (!anything_to_do()) bell.wait(seen, ns);
//   bell.finish_wait(); waker:  publish(data); bell.ring();
#pragma once

#include <atomic>
#include <cstdint>

namespace collie::detail {

// Two kinds of sleeper: a thread with work in flight wakes for every ring; an idle
// progress thread only needs to drain p2p rings, so it wakes only for rings that
// say "everyone" (p2p bytes, a new local operation). That keeps per-step flag
// rings from waking idle progress threads (on a 2-core machine each needless
// wake-up can cost the rank doing real work its time slice).
struct Doorbell {
  alignas(64) std::atomic<uint32_t> count{0};
  alignas(64) std::atomic<uint32_t> sleepers{0};       // wake on any ring
  alignas(64) std::atomic<uint32_t> idle_sleepers{0};  // wake on "everyone" rings only

  void ring(bool everyone = true);
  uint32_t prepare_wait(bool idle = false);
  void wait(uint32_t seen, int64_t timeout_ns);
  void finish_wait(bool idle = false);
};

}  // namespace collie::detail
