// Engine tasks that build communicators without blocking the progress thread on
// ranks that have not arrived yet.
//
// World: two MPI_Comm_idup of MPI_COMM_WORLD, one for the world group's operations
// and one "control" communicator for group creation, so collie never shares a
// communicator with the program's own MPI use.
// Sub-group: MPI_Comm_create_group is blocking and has no timeout, so the members
// first meet in a nonblocking rendezvous on the control communicator (each sends
// every other member a fingerprint of the group's rank list and receives theirs).
// Only when all have arrived does the blocking call run; a member that never
// calls create_group turns into a TimeoutError that names it, and members that
// disagree about the rank list are told so instead of hanging.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/mpi/task.h"

namespace collie::detail {

struct CommResult {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm control = MPI_COMM_NULL;  // world setup only
};

std::unique_ptr<Task> make_world_setup(std::shared_ptr<CommResult> result);

// `world_ranks` in group order; `me` is this process's world rank; `incarnation`
// separates re-creations of the same name. `tag_ub` bounds the rendezvous tag.
std::unique_ptr<Task> make_group_setup(MPI_Comm control, const std::string& name,
                                       const std::vector<int>& world_ranks, int me,
                                       uint64_t incarnation, int tag_ub,
                                       std::shared_ptr<CommResult> result);

}  // namespace collie::detail
