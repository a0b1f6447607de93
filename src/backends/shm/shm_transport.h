// The shared-memory transport: one ShmEngine per process, a ShmGroup per group.
#pragma once

#include <memory>

#include "backends/transport.h"

namespace collie::detail {

// Reads COLLIE_SHM_SLOT_BYTES / COLLIE_P2P_RING_BYTES (ValueError if invalid).
std::unique_ptr<Transport> make_shm_transport(const LaunchEnv& env);

}  // namespace collie::detail
