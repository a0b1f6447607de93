// all_reduce, reduce_scatter and reduce: native MPI reductions, or rank-ordered
// local reductions that match the shm backend bit for bit (see datatypes.h).
//
// The ordered forms move inputs with MPI and reduce with reduce_n, srcs in group
// rank order, so every element is combined exactly as the shm engine does it:
//   small all_reduce:  all-gather every input, each rank reduces all of them;
//   large all_reduce:  each rank owns one contiguous chunk; an all-to-all gives it
//                      every rank's piece of its chunk (reduce-scatter), it reduces,
//                      and an all-gather spreads the reduced chunks (2 (n-1)/n of the
//                      data per rank, like a ring, instead of (n-1) for small);
//   reduce_scatter:    an all-to-all of the pieces, then a local reduction;
//   reduce:            a gather to the root (small) or the large all_reduce's
//                      reduce-scatter followed by a gather of the chunks (large).
#include <cstring>
#include <vector>

#include "backends/mpi/mpi_call.h"
#include "backends/mpi/operations.h"
#include "core/reduce_kernels.h"

namespace collie::detail {
namespace {

// Up to this many bytes per rank, one all-gather beats two steps.
constexpr size_t kSmallBytes = 64 * 1024;

bool small(size_t count, DType dtype, int n) {
  return count * element_size(dtype) <= kSmallBytes || count < static_cast<size_t>(n);
}

// Reduces n blocks laid out one after another in `blocks` (block i from group rank i).
void reduce_blocks(void* dst, const uint8_t* blocks, int n, size_t count, DType dtype,
                   ReduceOp op) {
  if (count == 0) return;
  std::vector<const void*> srcs(static_cast<size_t>(n));
  const size_t stride = count * element_size(dtype);
  for (int i = 0; i < n; ++i)
    srcs[static_cast<size_t>(i)] = blocks + static_cast<size_t>(i) * stride;
  reduce_n(dst, srcs.data(), n, count, dtype, op);
}

// The chunk each rank owns in the large forms: nearly equal and contiguous (the
// first count % n chunks get one element more).
struct Chunks {
  int* counts;
  int* displs;
  int mine;  // elements in this rank's chunk
};

Chunks split(Task& t, size_t count, int n, int rank, const std::string& what) {
  std::vector<int>& counts = t.ints(static_cast<size_t>(n));
  std::vector<int>& displs = t.ints(static_cast<size_t>(n));
  const size_t base = count / static_cast<size_t>(n), extra = count % static_cast<size_t>(n);
  size_t off = 0;
  for (size_t j = 0; j < static_cast<size_t>(n); ++j) {
    size_t len = base + (j < extra ? 1 : 0);
    counts[j] = mpi_count(len, what);
    displs[j] = mpi_count(off, what);
    off += len;
  }
  return {counts.data(), displs.data(), counts[static_cast<size_t>(rank)]};
}

// Posts the all-to-all that gives this rank every rank's piece of its own chunk,
// laid out by source rank in `blocks` (n * chunks.mine elements).
void post_chunk_exchange(Task& t, const void* in, const Chunks& chunks, uint8_t* blocks, int n,
                         MPI_Datatype raw, MPI_Comm comm, int* rcounts, int* rdispls) {
  for (int i = 0; i < n; ++i) {
    rcounts[i] = chunks.mine;
    rdispls[i] = i * chunks.mine;
  }
  check_mpi(MPI_Ialltoallv(in, chunks.counts, chunks.displs, raw, blocks, rcounts, rdispls, raw,
                           comm, t.post()),
            "MPI_Ialltoallv", t.describe());
}

std::unique_ptr<Task> ordered_all_reduce(const MpiGroup& g, const WorkPtr& w, const void* in,
                                         void* out, size_t count, DType dtype, ReduceOp op) {
  auto t = std::make_unique<Task>(w);
  const std::string what = w->info().describe();
  const int n = g.size(), me = g.rank;
  const size_t esize = element_size(dtype);
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  if (small(count, dtype, n)) {
    const int c = mpi_count(count, what);
    uint8_t* blocks = t->scratch(static_cast<size_t>(n) * count * esize);
    t->then([=](Task& task) {
      check_mpi(MPI_Iallgather(in, c, raw, blocks, c, raw, comm, task.post()), "MPI_Iallgather",
                task.describe());
    });
    t->then([=](Task&) { reduce_blocks(out, blocks, n, count, dtype, op); });
    return t;
  }
  Chunks chunks = split(*t, count, n, me, what);
  mpi_count(static_cast<size_t>(n) * static_cast<size_t>(chunks.mine), what);
  uint8_t* blocks = t->scratch(static_cast<size_t>(n) * static_cast<size_t>(chunks.mine) * esize);
  int* rcounts = t->ints(static_cast<size_t>(n)).data();
  int* rdispls = t->ints(static_cast<size_t>(n)).data();
  t->then([=](Task& task) {
    post_chunk_exchange(task, in, chunks, blocks, n, raw, comm, rcounts, rdispls);
  });
  t->then([=](Task& task) {
    uint8_t* mine = static_cast<uint8_t*>(out) + static_cast<size_t>(chunks.displs[me]) * esize;
    reduce_blocks(mine, blocks, n, static_cast<size_t>(chunks.mine), dtype, op);
    check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, raw, out, chunks.counts, chunks.displs, raw, comm,
                              task.post()),
              "MPI_Iallgatherv", task.describe());
  });
  return t;
}

std::unique_ptr<Task> ordered_reduce_scatter(const MpiGroup& g, const WorkPtr& w, const void* in,
                                             void* out, size_t count, DType dtype, ReduceOp op) {
  auto t = std::make_unique<Task>(w);
  const std::string what = w->info().describe();
  const int n = g.size();
  const int c = mpi_count(count, what);
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  uint8_t* blocks = t->scratch(static_cast<size_t>(n) * count * element_size(dtype));
  t->then([=](Task& task) {
    check_mpi(MPI_Ialltoall(in, c, raw, blocks, c, raw, comm, task.post()), "MPI_Ialltoall",
              task.describe());
  });
  t->then([=](Task&) { reduce_blocks(out, blocks, n, count, dtype, op); });
  return t;
}

std::unique_ptr<Task> ordered_reduce(const MpiGroup& g, const WorkPtr& w, const void* in, void* out,
                                     size_t count, DType dtype, ReduceOp op, int root) {
  auto t = std::make_unique<Task>(w);
  const std::string what = w->info().describe();
  const int n = g.size(), me = g.rank;
  const bool is_root = me == root;
  const size_t esize = element_size(dtype);
  MPI_Comm comm = g.comm;
  MPI_Datatype raw = raw_type(dtype);
  if (small(count, dtype, n)) {
    const int c = mpi_count(count, what);
    uint8_t* blocks = is_root ? t->scratch(static_cast<size_t>(n) * count * esize) : nullptr;
    t->then([=](Task& task) {
      check_mpi(MPI_Igather(in, c, raw, blocks, c, raw, root, comm, task.post()), "MPI_Igather",
                task.describe());
    });
    if (is_root) t->then([=](Task&) { reduce_blocks(out, blocks, n, count, dtype, op); });
    return t;
  }
  Chunks chunks = split(*t, count, n, me, what);
  mpi_count(static_cast<size_t>(n) * static_cast<size_t>(chunks.mine), what);
  uint8_t* blocks = t->scratch(static_cast<size_t>(n) * static_cast<size_t>(chunks.mine) * esize);
  uint8_t* reduced = t->scratch(static_cast<size_t>(chunks.mine) * esize);
  int* rcounts = t->ints(static_cast<size_t>(n)).data();
  int* rdispls = t->ints(static_cast<size_t>(n)).data();
  t->then([=](Task& task) {
    post_chunk_exchange(task, in, chunks, blocks, n, raw, comm, rcounts, rdispls);
  });
  t->then([=](Task& task) {
    reduce_blocks(reduced, blocks, n, static_cast<size_t>(chunks.mine), dtype, op);
    check_mpi(MPI_Igatherv(reduced, chunks.mine, raw, out, chunks.counts, chunks.displs, raw, root,
                           comm, task.post()),
              "MPI_Igatherv", task.describe());
  });
  return t;
}

// MPI forbids a send buffer that overlaps the receive buffer except as
// MPI_IN_PLACE; the api never passes one, but a copy keeps the backend safe.
const void* separate(Task& t, const void* in, size_t in_bytes, const void* out, size_t out_bytes) {
  const auto* a = static_cast<const uint8_t*>(in);
  const auto* b = static_cast<const uint8_t*>(out);
  if (in_bytes == 0 || out_bytes == 0 || a + in_bytes <= b || b + out_bytes <= a) return in;
  uint8_t* copy = t.scratch(in_bytes);
  std::memcpy(copy, in, in_bytes);
  return copy;
}

}  // namespace

std::unique_ptr<Task> make_all_reduce(const MpiGroup& g, ReductionMode mode, const WorkPtr& w,
                                      const void* in, void* out, size_t count, DType dtype,
                                      ReduceOp op) {
  if (!reduces_natively(mode, dtype)) return ordered_all_reduce(g, w, in, out, count, dtype, op);
  auto t = std::make_unique<Task>(w);
  const int c = mpi_count(count, w->info().describe());
  const size_t bytes = count * element_size(dtype);
  const void* src = in == out ? MPI_IN_PLACE : separate(*t, in, bytes, out, bytes);
  MPI_Comm comm = g.comm;
  t->then([=](Task& task) {
    check_mpi(
        MPI_Iallreduce(src, out, c, reduce_type(dtype), reduce_op(dtype, op), comm, task.post()),
        "MPI_Iallreduce", task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_reduce_scatter(const MpiGroup& g, ReductionMode mode, const WorkPtr& w,
                                          const void* in, void* out, size_t count, DType dtype,
                                          ReduceOp op) {
  if (!reduces_natively(mode, dtype))
    return ordered_reduce_scatter(g, w, in, out, count, dtype, op);
  auto t = std::make_unique<Task>(w);
  const int c = mpi_count(count, w->info().describe());
  const size_t bytes = count * element_size(dtype);
  const void* src = separate(*t, in, bytes * static_cast<size_t>(g.size()), out, bytes);
  MPI_Comm comm = g.comm;
  t->then([=](Task& task) {
    check_mpi(MPI_Ireduce_scatter_block(src, out, c, reduce_type(dtype), reduce_op(dtype, op), comm,
                                        task.post()),
              "MPI_Ireduce_scatter_block", task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_reduce(const MpiGroup& g, ReductionMode mode, const WorkPtr& w,
                                  const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                                  int root) {
  if (!reduces_natively(mode, dtype)) return ordered_reduce(g, w, in, out, count, dtype, op, root);
  auto t = std::make_unique<Task>(w);
  const int c = mpi_count(count, w->info().describe());
  const size_t bytes = count * element_size(dtype);
  const bool is_root = g.rank == root;
  const void* src = !is_root ? in : in == out ? MPI_IN_PLACE : separate(*t, in, bytes, out, bytes);
  MPI_Comm comm = g.comm;
  t->then([=](Task& task) {
    check_mpi(
        MPI_Ireduce(src, out, c, reduce_type(dtype), reduce_op(dtype, op), root, comm, task.post()),
        "MPI_Ireduce", task.describe());
  });
  return t;
}

}  // namespace collie::detail
