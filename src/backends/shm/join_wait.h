// The waits of a shared-memory group's start-up (shm_group.cc): every member
// passes the same stages (peers' segments mapped, attached, CMA verdict), and
// each stage waits until every peer has reached it.
//
//   wait_for_join_stage(cfg, "joining",
//                       [&](int g) { return header(g).attached.load() != 0; },
//                       [&](int g) { return !process_alive(header(g).pid); });
//
// Start-up is rare: the wait sleeps with back-off (100 µs doubling to 10 ms)
// instead of using futexes. It has the group's deadline (TimeoutError naming the
// ranks that did not come) and fails at once (CommError) when a peer that has not
// reached the stage is dead.
#pragma once

#include <functional>

#include "backends/shm/shm_group.h"

namespace collie::detail {

// `ready(g)` says whether group rank g has reached the stage; once true it stays
// true. `dead(g)` says whether its process has exited (false while unknown).
// Liveness is read before readiness in every round, so a peer that passed the
// stage and then exited (a fast rank that raised in its first call while this
// one was descheduled) cannot fail a rank that is about to pass it as well: the
// peer passed only once every rank was ready, so the later readiness reads see
// them all.
void wait_for_join_stage(const ShmGroupConfig& cfg, const char* what,
                         const std::function<bool(int)>& ready,
                         const std::function<bool(int)>& dead);

}  // namespace collie::detail
