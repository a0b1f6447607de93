// Transport: a process-wide engine ("shm", later "mpi") that makes group backends.
//
// init() picks one transport (select_transport) and asks it for the world's
// Backend; create_group asks it for each sub-group's Backend (a collective over
// the group's members). release() drops every Backend, then shuts the transport
// down. Adding a transport = one implementation of this interface plus a line in
// transport.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/env.h"

namespace collie::detail {

struct GroupSpec {
  std::string name;
  std::vector<int> world_ranks;  // group rank i = world_ranks[i]
  int my_group_rank = 0;
  uint64_t incarnation = 0;  // how many groups of this name were created before
  double timeout_seconds = 300;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  // The world group's backend (called once, by init()).
  virtual std::unique_ptr<Backend> create_world(double timeout_seconds) = 0;
  // A sub-group's backend; blocks until every member has joined (or the deadline).
  virtual std::unique_ptr<Backend> create_group(const GroupSpec& spec) = 0;
  // Waits for outstanding operations, then stops. Every Backend is gone by then.
  virtual void shutdown() = 0;
};

// Which transport to use and why: `requested` (init's argument, else COLLIE_BACKEND),
// else the environment. ValueError for an unknown or unavailable name.
struct TransportChoice {
  std::string name;
  std::string reason;
};
TransportChoice select_transport(const std::string& requested, const LaunchEnv& env);

// Transports compiled into this build, e.g. {"shm"}.
std::vector<std::string> available_transports();

std::unique_ptr<Transport> make_transport(const TransportChoice& choice, const LaunchEnv& env);

}  // namespace collie::detail
