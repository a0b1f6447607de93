// Is a peer process still alive? Used when a wait makes no progress.
#pragma once

#include <sys/types.h>

namespace collie::detail {

// False when `pid` no longer exists or is a zombie (exited, not yet reaped by its parent).
bool process_alive(pid_t pid);

}  // namespace collie::detail
