// send and recv: MPI_Isend / MPI_Irecv on the group's communicator, so each group
// has its own tag space and MPI's non-overtaking rule gives FIFO order per
// (source, group, tag), as on shm.
#include "backends/mpi/mpi_call.h"
#include "backends/mpi/operations.h"
#include "collie/errors.h"

namespace collie::detail {
namespace {

void check_tag(int tag, int tag_ub, const std::string& what) {
  if (tag < 0 || tag > tag_ub) {
    throw ValueError(what + ": tag " + std::to_string(tag) +
                     " is outside the range MPI allows, [0, " + std::to_string(tag_ub) + "]");
  }
}

}  // namespace

std::unique_ptr<Task> make_send(const MpiGroup& g, const WorkPtr& w, const void* in, size_t count,
                                DType dtype, int peer, int tag, int tag_ub) {
  const int world_peer = g.world_ranks[static_cast<size_t>(peer)];
  const std::string what = w->info().describe_transfer(/*is_send=*/true, world_peer, tag);
  check_tag(tag, tag_ub, what);
  auto t = std::make_unique<Task>(w);
  t->describe_as(what);
  const int c = mpi_count(count, what);
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  t->then([=](Task& task) {
    check_mpi(MPI_Isend(in, c, raw, peer, tag, comm, task.post()), "MPI_Isend", task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_recv(const MpiGroup& g, const WorkPtr& w, void* out, size_t count,
                                DType dtype, int peer, int tag, int tag_ub) {
  const int world_peer = g.world_ranks[static_cast<size_t>(peer)];
  const std::string what = w->info().describe_transfer(/*is_send=*/false, world_peer, tag);
  check_tag(tag, tag_ub, what);
  auto t = std::make_unique<Task>(w);
  t->describe_as(what);
  const int c = mpi_count(count, what);
  const size_t expected = count * element_size(dtype);
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  t->then([=](Task& task) {
    check_mpi(MPI_Irecv(out, c, raw, peer, tag, comm, task.post()), "MPI_Irecv", task.describe());
  });
  // A shorter message is not an MPI error; for collie it is (the shm backend agrees).
  t->then([=](Task& task) {
    int got = 0;
    MPI_Status status = task.statuses().at(0);
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (got < 0 || static_cast<size_t>(got) != expected) {
      throw CommError(task.describe() + ": rank " + std::to_string(world_peer) + " sent " +
                      std::to_string(got) + " bytes but this receive expects " +
                      std::to_string(expected) + " bytes of " + std::string(dtype_name(dtype)) +
                      " (shapes and dtypes of send and recv must match)");
    }
  });
  return t;
}

}  // namespace collie::detail
