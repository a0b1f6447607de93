// The process-wide runtime: whether init() ran, the world, the group registry.
//
// Internal. The public functions of collie/runtime.h and the api's choke point
// (lookup_for_op) are its only users. All members are guarded by one mutex;
// operations hold it only to look a group up, never while waiting.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "backends/transport.h"
#include "runtime/env.h"
#include "runtime/group.h"
#include "runtime/signal_dump.h"

namespace collie::detail {

class Transport;

struct RuntimeState {
  std::mutex mu;
  // Written under mu; atomic so that is_initialized() reads it without mu,
  // which init() holds through the whole rendezvous.
  std::atomic<bool> initialized{false};
  LaunchEnv env;
  std::string backend;     // "shm"
  std::string world_name;  // what the user calls the world
  double timeout_seconds = 300;
  std::string backend_reason;  // why that backend was chosen
  std::unique_ptr<Transport> transport;
  std::unique_ptr<SignalDump> signal_dump;  // SIGUSR1 prints the flight recorders
  std::shared_ptr<Group> world;
  std::map<std::string, std::shared_ptr<Group>, std::less<>> groups;  // not the world
  std::map<std::string, uint64_t, std::less<>> incarnations;          // creations per name
  // Bumped (under mu) whenever the set of groups changes: init, release, create
  // and destroy. lookup_for_op's per-thread cache is valid while it is unchanged.
  std::atomic<uint64_t> generation{0};
};

RuntimeState& runtime_state();

// True for WORLD and MindSpore's three world names.
bool is_world_name(std::string_view name);

// The group an operation named `op` runs on: RuntimeError if collie is not
// initialised, the group does not exist, or this rank is not a member. Never
// null; valid until this thread's next lookup_for_op (this thread's cache holds
// it), so one call looks up one group. A caller that holds several uses
// lookup_shared_for_op, which leaves the cache alone.
Group* lookup_for_op(std::string_view group, std::string_view op);
std::shared_ptr<Group> lookup_shared_for_op(std::string_view group, std::string_view op);

// World rank -> group rank for a rank argument of `op` (`what` = "dst", "src", "peer").
// RuntimeError if that world rank is not in the group.
int to_group_rank(const Group& group, int world_rank, std::string_view op, std::string_view what);

}  // namespace collie::detail
