// Futex wait/wake on 32-bit words: the doorbells in memory shared between
// processes (MAP_SHARED mappings, hence the non-private futex operations) and
// Work's completion word in process memory.
//
// Waits always carry a timeout: callers re-check their condition, their deadline
// and their peers' liveness after every return.
#pragma once

#include <atomic>
#include <cstdint>

namespace collie::detail {

// Sleeps while *word == expected, for at most timeout_ns (spurious wakeups allowed).
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns);
// Wakes up to `count` waiters on `word`.
void futex_wake(std::atomic<uint32_t>* word, int count);

}  // namespace collie::detail
