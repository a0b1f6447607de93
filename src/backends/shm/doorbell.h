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

struct Doorbell {
  alignas(64) std::atomic<uint32_t> count{0};
  alignas(64) std::atomic<uint32_t> sleepers{0};

  void ring();
  uint32_t prepare_wait();
  void wait(uint32_t seen, int64_t timeout_ns);
  void finish_wait();
};

}  // namespace collie::detail
