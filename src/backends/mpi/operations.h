// Builders that turn one Backend call into a Task of nonblocking MPI phases.
//
// They run on the caller's thread and make no MPI calls themselves: they check
// MPI's int limits (ValueError), allocate scratch memory and record the phases,
// which the progress thread then runs on the group's communicator. Ranks (root,
// peer) are group ranks, i.e. ranks of that communicator.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/mpi/datatypes.h"
#include "backends/mpi/mpi_group.h"
#include "backends/mpi/task.h"

namespace collie::detail {

// Data movement (operations.cc).
std::unique_ptr<Task> make_all_gather(const MpiGroup& g, const WorkPtr& w, const void* in,
                                      void* out, size_t count, DType dtype);
std::unique_ptr<Task> make_broadcast(const MpiGroup& g, const WorkPtr& w, const void* in, void* out,
                                     size_t count, DType dtype, int root);
std::unique_ptr<Task> make_gather(const MpiGroup& g, const WorkPtr& w, const void* in, void* out,
                                  size_t count, DType dtype, int root);
std::unique_ptr<Task> make_scatter(const MpiGroup& g, const WorkPtr& w, const void* in, void* out,
                                   size_t count, DType dtype, int root);
std::unique_ptr<Task> make_barrier(const MpiGroup& g, const WorkPtr& w);
std::unique_ptr<Task> make_all_to_all(const MpiGroup& g, const WorkPtr& w, const AllToAllInput& in,
                                      CountSpan send_counts, void* out, CountSpan recv_counts,
                                      DType dtype);

// Reductions (reductions.cc): native MPI reductions or rank-ordered local ones (datatypes.h).
std::unique_ptr<Task> make_all_reduce(const MpiGroup& g, ReductionMode mode, const WorkPtr& w,
                                      const void* in, void* out, size_t count, DType dtype,
                                      ReduceOp op);
std::unique_ptr<Task> make_reduce_scatter(const MpiGroup& g, ReductionMode mode, const WorkPtr& w,
                                          const void* in, void* out, size_t count, DType dtype,
                                          ReduceOp op);
std::unique_ptr<Task> make_reduce(const MpiGroup& g, ReductionMode mode, const WorkPtr& w,
                                  const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                                  int root);

// Point-to-point (p2p.cc). `tag_ub` is MPI's largest tag: ValueError outside [0, tag_ub].
std::unique_ptr<Task> make_send(const MpiGroup& g, const WorkPtr& w, const void* in, size_t count,
                                DType dtype, int peer, int tag, int tag_ub);
std::unique_ptr<Task> make_recv(const MpiGroup& g, const WorkPtr& w, void* out, size_t count,
                                DType dtype, int peer, int tag, int tag_ub);

}  // namespace collie::detail
