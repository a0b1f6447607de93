// The collectives that only move data. Each is one nonblocking MPI call on an
// unsigned type as wide as the element (datatypes.h), so bytes arrive unchanged.
#include "backends/mpi/operations.h"

#include <cstring>

#include "backends/mpi/mpi_call.h"

namespace collie::detail {

std::unique_ptr<Task> make_all_gather(const MpiGroup& g, const WorkPtr& w, const void* in,
                                      void* out, size_t count, DType dtype) {
  auto t = std::make_unique<Task>(w);
  const int c = mpi_count(count, w->info().describe());
  mpi_count(count * static_cast<size_t>(g.size()), w->info().describe());
  const size_t bytes = count * element_size(dtype);
  // The input may already sit in its place in the output: MPI wants MPI_IN_PLACE then.
  const bool in_place = in == static_cast<uint8_t*>(out) + static_cast<size_t>(g.rank) * bytes;
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  t->then([=](Task& task) {
    check_mpi(MPI_Iallgather(in_place ? MPI_IN_PLACE : in, c, raw, out, c, raw, comm, task.post()),
              "MPI_Iallgather", task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_broadcast(const MpiGroup& g, const WorkPtr& w, const void* in, void* out,
                                     size_t count, DType dtype, int root) {
  auto t = std::make_unique<Task>(w);
  const int c = mpi_count(count, w->info().describe());
  const bool is_root = g.rank == root;
  const size_t bytes = count * element_size(dtype);
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  t->then([=](Task& task) {
    // MPI broadcasts within one buffer: the root's data goes to `out` first.
    if (is_root && in != out && bytes != 0) std::memmove(out, in, bytes);
    check_mpi(MPI_Ibcast(out, c, raw, root, comm, task.post()), "MPI_Ibcast", task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_gather(const MpiGroup& g, const WorkPtr& w, const void* in, void* out,
                                  size_t count, DType dtype, int root) {
  auto t = std::make_unique<Task>(w);
  const int c = mpi_count(count, w->info().describe());
  mpi_count(count * static_cast<size_t>(g.size()), w->info().describe());
  const bool is_root = g.rank == root;
  const size_t bytes = count * element_size(dtype);
  const bool in_place =
      is_root && in == static_cast<uint8_t*>(out) + static_cast<size_t>(root) * bytes;
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  t->then([=](Task& task) {
    check_mpi(
        MPI_Igather(in_place ? MPI_IN_PLACE : in, c, raw, out, c, raw, root, comm, task.post()),
        "MPI_Igather", task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_scatter(const MpiGroup& g, const WorkPtr& w, const void* in, void* out,
                                   size_t count, DType dtype, int root) {
  auto t = std::make_unique<Task>(w);
  const int c = mpi_count(count, w->info().describe());
  mpi_count(count * static_cast<size_t>(g.size()), w->info().describe());
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  t->then([=](Task& task) {
    check_mpi(MPI_Iscatter(in, c, raw, out, c, raw, root, comm, task.post()), "MPI_Iscatter",
              task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_barrier(const MpiGroup& g, const WorkPtr& w) {
  auto t = std::make_unique<Task>(w);
  MPI_Comm comm = g.comm;
  t->then([=](Task& task) {
    check_mpi(MPI_Ibarrier(comm, task.post()), "MPI_Ibarrier", task.describe());
  });
  return t;
}

}  // namespace collie::detail
