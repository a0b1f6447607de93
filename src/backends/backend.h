// Backend: the interface every transport implements, one instance per group.
//
// The api validates arguments, allocates outputs and hands a backend raw
// contiguous buffers plus a Work to complete. Ranks (root, peer) are GROUP ranks
// here; the api has already translated world ranks. Every method returns at once
// and completes the Work later (from a progress engine); operations issued on one
// group complete in issue order. Counts are elements of `dtype`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collie/comm.h"
#include "collie/dtype.h"
#include "core/small_pool.h"
#include "runtime/work.h"

namespace collie::detail {

// Per-rank element counts of an all_to_all, one per group rank, as a call
// passes them (a backend copies what it keeps).
using CountSpan = std::span<const size_t>;
// Counts a backend keeps while an operation runs. Every call makes some and
// drops them: from the per-thread pool (core/small_pool.h).
using Counts = std::vector<size_t, PoolAllocator<size_t>>;

// Where an all_to_all's input lies: the pieces for ranks 0..n-1 back to back in
// rank order from `packed` (all_to_all_single, or a list whose tensors lie back
// to back), or, when `pieces` is not empty, the piece for rank j at pieces[j]
// wherever it is (all_to_all_with_output_shape's separate tensors, read in place
// instead of copied together first). Like the counts, `pieces` is read during the
// call only; the memory it points to is read until the operation completes.
struct AllToAllInput {
  const void* packed = nullptr;
  std::span<const void* const> pieces;

  bool is_packed() const { return pieces.empty(); }
  // Where the piece for rank j starts; `displacement`: the bytes before it in a
  // packed input (the sum of the earlier pieces' sizes).
  const void* piece(size_t j, size_t displacement) const {
    return is_packed() ? static_cast<const uint8_t*>(packed) + displacement : pieces[j];
  }
};

class Backend {
 public:
  virtual ~Backend() = default;

  // out[i] = op over ranks of in[i]; count elements.
  virtual void all_reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                          ReduceOp op) = 0;
  // out = concat over ranks of in (count elements each).
  virtual void all_gather(const WorkPtr& w, const void* in, void* out, size_t count,
                          DType dtype) = 0;
  // in has n*count elements; out (count) = op over ranks of in[me*count ...].
  virtual void reduce_scatter(const WorkPtr& w, const void* in, void* out, size_t count,
                              DType dtype, ReduceOp op) = 0;
  // out (root only; nullptr elsewhere) = op over ranks of in.
  virtual void reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                      ReduceOp op, int root) = 0;
  // out = root's in (in is read on the root only).
  virtual void broadcast(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                         int root) = 0;
  // out (root only, n*count) = concat over ranks of in (count each).
  virtual void gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                      int root) = 0;
  // out (count) = root's in[me*count ...] (in: n*count, read on the root only).
  virtual void scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                       int root) = 0;
  virtual void barrier(const WorkPtr& w) = 0;
  // Sends send_counts[j] elements to rank j (from `in`: packed in rank order or
  // piece by piece) and receives recv_counts[j] from rank j (packed in rank order
  // in `out`). The counts are read during the call only: the operation copies
  // what it keeps.
  virtual void all_to_all(const WorkPtr& w, const AllToAllInput& in, CountSpan send_counts,
                          void* out, CountSpan recv_counts, DType dtype) = 0;
  virtual void send(const WorkPtr& w, const void* in, size_t count, DType dtype, int peer,
                    int tag) = 0;
  virtual void recv(const WorkPtr& w, void* out, size_t count, DType dtype, int peer, int tag) = 0;

  // Blocks until every operation issued on this group has completed or failed.
  // A backend whose calls may return before every rank's call was compared
  // (shm's eager rooted calls) then compares the last one and throws its
  // CommError (or TimeoutError) if it mismatched.
  virtual void drain() = 0;
};

}  // namespace collie::detail
