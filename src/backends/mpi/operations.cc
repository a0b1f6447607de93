// The collectives that only move data. Each is one nonblocking MPI call on an
// unsigned type as wide as the element (datatypes.h), so bytes arrive unchanged.
#include "backends/mpi/operations.h"

#include <cstring>

#include "backends/mpi/mpi_call.h"
#include "collie/errors.h"

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

// Like shm, the ranks first share every rank's send and receive counts, so each
// knows the whole matrix: a mismatch (i sends j fewer or more elements than j
// expects) fails on every rank alike, before any data moves, and the group stays
// usable. MPI itself would truncate or misplace data instead. An input given
// piece by piece is first copied together into the task's scratch: MPI's
// all_to_all takes one buffer (its displacements are ints from one address).
std::unique_ptr<Task> make_all_to_all(const MpiGroup& g, const WorkPtr& w,
                                      const AllToAllInput& input, CountSpan send_counts, void* out,
                                      CountSpan recv_counts, DType dtype) {
  auto t = std::make_unique<Task>(w);
  const std::string what = w->info().describe();
  const size_t n = static_cast<size_t>(g.size());
  const void* in = input.packed;
  if (!input.is_packed()) {
    const size_t esize = element_size(dtype);
    size_t bytes = 0;
    for (size_t c : send_counts) bytes += c * esize;
    uint8_t* joined = t->scratch(bytes);
    for (size_t j = 0, at = 0; j < n; ++j) {
      if (send_counts[j] == 0) continue;
      std::memcpy(joined + at, input.pieces[j], send_counts[j] * esize);
      at += send_counts[j] * esize;
    }
    in = joined;
  }
  std::vector<int>& sc = t->ints(n);
  std::vector<int>& sd = t->ints(n);
  std::vector<int>& rc = t->ints(n);
  std::vector<int>& rd = t->ints(n);
  size_t soff = 0, roff = 0;
  for (size_t j = 0; j < n; ++j) {
    sc[j] = mpi_count(send_counts[j], what);
    sd[j] = mpi_count(soff, what);
    rc[j] = mpi_count(recv_counts[j], what);
    rd[j] = mpi_count(roff, what);
    soff += send_counts[j];
    roff += recv_counts[j];
  }
  // Row i of the table: [what i sends to 0..n-1, what i expects from 0..n-1].
  auto* mine = reinterpret_cast<uint64_t*>(t->scratch(2 * n * sizeof(uint64_t)));
  auto* table = reinterpret_cast<uint64_t*>(t->scratch(2 * n * n * sizeof(uint64_t)));
  for (size_t j = 0; j < n; ++j) {
    mine[j] = send_counts[j];
    mine[n + j] = recv_counts[j];
  }
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  const int row = static_cast<int>(2 * n);
  const std::vector<int> world = g.world_ranks;
  int* scp = sc.data();
  int* sdp = sd.data();
  int* rcp = rc.data();
  int* rdp = rd.data();
  t->then([=](Task& task) {
    check_mpi(MPI_Iallgather(mine, row, MPI_UINT64_T, table, row, MPI_UINT64_T, comm, task.post()),
              "MPI_Iallgather", task.describe());
  });
  t->then([=](Task& task) {
    std::string mismatches;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        uint64_t sent = table[i * 2 * n + j], expected = table[j * 2 * n + n + i];
        if (sent != expected && mismatches.size() < 400) {
          mismatches += " rank " + std::to_string(world[i]) + " sends " + std::to_string(sent) +
                        " elements to rank " + std::to_string(world[j]) + ", which expects " +
                        std::to_string(expected) + ";";
        }
      }
    }
    if (!mismatches.empty()) {
      task.keeps_group_usable = true;  // every rank stops here, before any data moved
      throw CommError(task.describe() + ": send and receive sizes disagree:" + mismatches);
    }
    check_mpi(MPI_Ialltoallv(in, scp, sdp, raw, out, rcp, rdp, raw, comm, task.post()),
              "MPI_Ialltoallv", task.describe());
  });
  return t;
}

}  // namespace collie::detail
