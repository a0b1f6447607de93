// Is a peer process still alive? Used when a wait makes no progress.
#pragma once

#include <sys/types.h>

namespace collie::detail {

// False when `pid` no longer exists or is a zombie (exited, not yet reaped by its
// parent) with no thread left; a zombie leader whose threads are still exiting
// counts as alive for those few moments (see liveness.cc).
bool process_alive(pid_t pid);

}  // namespace collie::detail
