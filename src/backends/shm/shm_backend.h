// ShmBackend: the Backend of one group on the shared-memory engine.
//
// It turns each call into an OpState (collectives.h) queued on the group, or a
// send/receive request for the engine's p2p matcher, and returns at once.
#pragma once

#include <memory>
#include <optional>
#include <vector>

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
  void all_to_all(const WorkPtr& w, const AllToAllInput& in, CountSpan send_counts, void* out,
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
  // Where each piece of an all_to_all input given piece by piece lies in the
  // shared arena, when every non-empty one and the output do; else empty.
  std::vector<ArenaRef, PoolAllocator<ArenaRef>> shared_pieces(const AllToAllInput& in,
                                                               CountSpan send_counts, size_t esize,
                                                               void* out, size_t out_bytes) const;
  // Private buffers for the CMA path (direct_ops.h) when the call's `bytes` per
  // rank lie in `sizes`, its row of the group's table (copy_rules.h).
  std::optional<DirectBuffers> cma(const void* in, size_t bytes, void* out,
                                   const SizeRange& sizes) const {
    if (!sizes.contains(bytes)) return std::nullopt;
    return cma_buffers(in, out);
  }
  // The same for a reduction, unless COLLIE_ALLREDUCE_ALGO forces a staged
  // algorithm.
  std::optional<DirectBuffers> cma_reduction(const void* in, size_t bytes, void* out,
                                             const SizeRange& sizes) const {
    if (!sizes.contains(bytes) || all_reduce_algo_forced()) return std::nullopt;
    return cma_buffers(in, out);
  }
  const CopyRules& rules() const { return group_->copy_rules(); }
  CollectiveCall call(const WorkPtr& w) {
    w->set_driver(engine_);
    return {engine_.get(), group_.get(), w};
  }
};

}  // namespace collie::detail
