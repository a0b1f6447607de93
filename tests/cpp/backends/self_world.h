// self_world.h — the configuration of a one-rank shared-memory world with p2p
// rings, for tests and fuzzers that drive a P2PMatcher against itself (its rank
// sends to itself through its own ring).
//
//   ShmGroup world(self_world_config("matcher", 0x77, 4096, 5.0));
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>

#include "backends/shm/shm_group.h"

namespace collie::detail {

// A world of rank 0 alone, slots and rings of `ring_bytes`; the job id is
// `job_prefix` plus this process's pid and a counter, so every call names new
// shared-memory objects.
inline ShmGroupConfig self_world_config(const std::string& job_prefix, uint64_t group_id,
                                        size_t ring_bytes, double timeout_seconds) {
  static int counter = 0;
  ShmGroupConfig cfg;
  cfg.job_id = job_prefix + std::to_string(getpid()) + "_" + std::to_string(counter++);
  cfg.name = job_prefix;
  cfg.group_id = group_id;
  cfg.world_ranks = {0};
  cfg.slot_bytes = 4096;
  cfg.ring_bytes = ring_bytes;
  cfg.with_rings = true;
  cfg.timeout_seconds = timeout_seconds;
  return cfg;
}

}  // namespace collie::detail
