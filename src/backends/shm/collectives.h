// The shared-memory collectives, each a StepOp (see step_op.h for the protocol).
//
// Staging: each rank's slot holds `slot_bytes`. Operations where every rank
// sends the same data to all (all_reduce, all_gather, broadcast, reduce, gather)
// move one slot-sized chunk per step; operations with a different piece per
// destination (reduce_scatter, scatter, all_to_all) split the slot into N pieces.
// Reductions read the N slots in group-rank order, so every rank computes
// bitwise identical results. docs/algorithms.md describes steps and bytes moved.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/shm/arena.h"
#include "backends/shm/op_state.h"
#include "collie/comm.h"

namespace collie::detail {

class ShmEngine;
class ShmGroup;

// The Work is referred to, not held: the operation made from the call takes the
// one reference it keeps (each copy of a WorkPtr is an atomic read-modify-write
// and its release another). A call lives only while the backend makes its op.
struct CollectiveCall {
  ShmEngine* engine;
  ShmGroup* group;
  const WorkPtr& work;
};

// COLLIE_ALLREDUCE_ALGO names a staged algorithm (oneshot, twoshot): all_reduce
// then always stages, on private tensors too (no CMA path, direct_ops.h).
bool all_reduce_algo_forced();

std::unique_ptr<OpState> make_all_reduce(CollectiveCall c, const void* in, void* out, size_t count,
                                         DType dtype, ReduceOp op);
std::unique_ptr<OpState> make_reduce(CollectiveCall c, const void* in, void* out, size_t count,
                                     DType dtype, ReduceOp op, int root);
std::unique_ptr<OpState> make_broadcast(CollectiveCall c, const void* in, void* out, size_t count,
                                        DType dtype, int root);
std::unique_ptr<OpState> make_all_gather(CollectiveCall c, const void* in, void* out, size_t count,
                                         DType dtype);
std::unique_ptr<OpState> make_gather(CollectiveCall c, const void* in, void* out, size_t count,
                                     DType dtype, int root);
std::unique_ptr<OpState> make_reduce_scatter(CollectiveCall c, const void* in, void* out,
                                             size_t count, DType dtype, ReduceOp op);
std::unique_ptr<OpState> make_scatter(CollectiveCall c, const void* in, void* out, size_t count,
                                      DType dtype, int root);
std::unique_ptr<OpState> make_barrier(CollectiveCall c);
// Checks an all_to_all count matrix: `matrix` holds group rank i's 2n counts at
// i * 2n (the n it sends to each rank, then the n it expects from each).
// CommError naming every pair that disagrees.
void check_all_to_all_counts(const ShmGroup& g, const OpInfo& info, const size_t* matrix);

// `shared_input`: where this rank's input is in the shared arena, when every
// rank's input and output are there (the pieces are then read in place): one
// reference for a packed input, one per piece (empty pieces: any) for an input
// given piece by piece; empty when the input is not shared.
std::unique_ptr<OpState> make_all_to_all(CollectiveCall c, const AllToAllInput& in,
                                         CountSpan send_counts, void* out, CountSpan recv_counts,
                                         DType dtype, std::span<const ArenaRef> shared_input);

}  // namespace collie::detail
