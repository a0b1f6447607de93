// ShmBackend: the Backend of one group on the shared-memory engine.
//
// It turns each call into an OpState (collectives.h) queued on the group, or a
// send/receive request for the engine's p2p matcher, and returns at once.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>

#include "backends/backend.h"
#include "backends/shm/collectives.h"
#include "backends/shm/direct_ops.h"
#include "backends/shm/engine.h"
#include "backends/shm/shm_group.h"

namespace collie::detail {

class ShmBackend final : public Backend {
 public:
  ShmBackend(std::shared_ptr<ShmEngine> engine, std::shared_ptr<ShmGroup> group);
  ~ShmBackend() override;

  void all_reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                  ReduceOp op) override;
  void all_gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype) override;
  void reduce_scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                      ReduceOp op) override;
  void reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype, ReduceOp op,
              int root) override;
  void broadcast(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                 int root) override;
  void gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
              int root) override;
  void scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
               int root) override;
  void barrier(const WorkPtr& w) override;
  void all_to_all(const WorkPtr& w, const void* in, CountSpan send_counts, void* out,
                  CountSpan recv_counts, DType dtype) override;
  void send(const WorkPtr& w, const void* in, size_t count, DType dtype, int peer,
            int tag) override;
  void recv(const WorkPtr& w, void* out, size_t count, DType dtype, int peer, int tag) override;
  void drain() override;

 private:
  std::shared_ptr<ShmEngine> engine_;
  std::shared_ptr<ShmGroup> group_;
  size_t group_size() const { return static_cast<size_t>(group_->size()); }
  // This rank's buffers when the input (`in_bytes`, at least `min_bytes`) and
  // the output (if any) are in the shared arena: the single-copy path
  // (direct_ops.h). Every rank decides the same way unless the ranks mixed
  // shared and private tensors, which the fingerprints then report.
  std::optional<DirectBuffers> direct(const void* in, size_t in_bytes, void* out, size_t out_bytes,
                                      size_t min_bytes = kDirectMinBytes) const;
  // Private buffers for the CMA path (direct_ops.h) when the group agreed on CMA
  // and the call moves kCmaMinBytes to kCmaMaxBytes per rank
  // (`min_single_copy` to `max_single_copy` where the group prefers single
  // copies).
  std::optional<DirectBuffers> cma(const void* in, size_t bytes, void* out,
                                   size_t min_single_copy = kCmaMinBytesSingleCopy,
                                   size_t max_single_copy = kCmaMaxBytesSingleCopy) const {
    const bool single = group_->prefers_single_copy();
    const size_t min_bytes =
        single ? std::max(min_single_copy, group_->single_copy_min_bytes()) : kCmaMinBytes;
    const size_t max_bytes = single ? max_single_copy : kCmaMaxBytes;
    if (!group_->cma_for_collectives() || bytes < min_bytes || bytes >= max_bytes) {
      return std::nullopt;
    }
    return cma_buffers(in, out);
  }
  // Whether a broadcast or scatter of `bytes` per rank, too large for cma() on a
  // group that stages, reads the root's input with CMA if it lies on huge pages
  // (cma_if_huge_pages.h).
  // `root_input_bytes`: all of the root's input (scatter: every rank's piece).
  // With more non-roots than kCmaMaxReadersOfOneProcess, from
  // kCmaIfRootOnHugePagesMinBytes of it whatever the copy path (direct_ops.h,
  // "one process's pages").
  bool cma_if_root_on_huge_pages(size_t bytes, size_t root_input_bytes) const {
    if (group_->size() <= 1 || !group_->cma_for_collectives()) return false;
    if (!few_readers_of_root()) return root_input_bytes >= kCmaIfRootOnHugePagesMinBytes;
    return !group_->prefers_single_copy() && bytes >= kCmaMaxBytes;
  }
  // Whether a hybrid group with more ranks than CPUs, which otherwise stages its
  // collectives, reads a call of `bytes` per rank with CMA (direct_ops.h): from
  // `min_bytes` up to `max_bytes`.
  bool cma_oversubscribed_hybrid(size_t bytes, size_t min_bytes, size_t max_bytes) const {
    return group_->copy_path() == CopyPath::kHybrid && group_->cma() &&
           !group_->cma_for_collectives() && bytes >= min_bytes && bytes < max_bytes;
  }
  // Whether broadcast and scatter, whose non-roots all read the root's input, may
  // read it with CMA wherever it lies (direct_ops.h, "one process's pages").
  bool few_readers_of_root() const { return group_->size() - 1 <= kCmaMaxReadersOfOneProcess; }
  // Private buffers for a reduction through CMA (direct_ops.h): where the group
  // prefers single copies and agreed on CMA, from `min_bytes` per rank up to
  // `max_bytes`, unless COLLIE_ALLREDUCE_ALGO forces a staged algorithm.
  std::optional<DirectBuffers> cma_reduction(const void* in, size_t bytes, void* out,
                                             size_t min_bytes, size_t max_bytes) const {
    if (!group_->prefers_single_copy() || !group_->cma_for_collectives() || bytes < min_bytes ||
        bytes < group_->single_copy_min_bytes() || bytes >= max_bytes || all_reduce_algo_forced()) {
      return std::nullopt;
    }
    return cma_buffers(in, out);
  }
  CollectiveCall call(const WorkPtr& w) {
    w->set_driver(engine_);
    return {engine_.get(), group_.get(), w};
  }
};

}  // namespace collie::detail
