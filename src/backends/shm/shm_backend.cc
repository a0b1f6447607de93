#include "backends/shm/shm_backend.h"

#include "backends/shm/cma_if_huge_pages.h"
#include "backends/shm/collectives.h"
#include "backends/shm/direct_ops.h"
#include "backends/shm/step_op.h"

namespace collie::detail {

std::optional<DirectBuffers> ShmBackend::direct(const void* in, size_t in_bytes, void* out,
                                                size_t out_bytes, size_t min_bytes) const {
  if (in_bytes < min_bytes) return std::nullopt;
  const SharedArena& arena = SharedArena::instance();
  // No shared tensor exists: nothing to look up (every all_to_all asks, whatever its size).
  if (!arena.in_use()) return std::nullopt;
  DirectBuffers b{in, arena.locate(in, in_bytes), out, ArenaRef{}};
  if (!b.in_ref.present) return std::nullopt;
  if (out != nullptr) {
    b.out_ref = arena.locate(out, out_bytes);
    if (!b.out_ref.present) return std::nullopt;
  }
  return b;
}

ShmBackend::ShmBackend(std::shared_ptr<ShmEngine> engine, std::shared_ptr<ShmGroup> group)
    : engine_(std::move(engine)), group_(std::move(group)) {}

ShmBackend::~ShmBackend() {
  // The engine holds a raw pointer to the group while it has queued operations.
  engine_->detach(group_.get());
}

void ShmBackend::all_reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                            ReduceOp op) {
  const size_t bytes = count * element_size(dtype);
  if (auto b = direct(in, bytes, out, bytes)) {
    return engine_->submit(group_.get(), make_direct_all_reduce(call(w), *b, count, dtype, op));
  }
  if (auto b = cma_reduction(in, bytes, out, rules().all_reduce_cma)) {
    return engine_->submit(group_.get(), make_direct_all_reduce(call(w), *b, count, dtype, op));
  }
  engine_->submit(group_.get(), make_all_reduce(call(w), in, out, count, dtype, op));
}

void ShmBackend::all_gather(const WorkPtr& w, const void* in, void* out, size_t count,
                            DType dtype) {
  const size_t bytes = count * element_size(dtype);
  auto b = direct(in, bytes, out, bytes * group_size());
  if (!b) b = cma(in, bytes, out, rules().all_gather_cma);
  if (b) return engine_->submit(group_.get(), make_direct_all_gather(call(w), *b, count, dtype));
  engine_->submit(group_.get(), make_all_gather(call(w), in, out, count, dtype));
}

void ShmBackend::reduce_scatter(const WorkPtr& w, const void* in, void* out, size_t count,
                                DType dtype, ReduceOp op) {
  const size_t bytes = count * element_size(dtype);
  if (auto b = direct(in, bytes * group_size(), out, bytes)) {
    return engine_->submit(group_.get(),
                           make_direct_reduce_scatter(call(w), *b, count, dtype, op));
  }
  engine_->submit(group_.get(), make_reduce_scatter(call(w), in, out, count, dtype, op));
}

void ShmBackend::reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                        ReduceOp op, int root) {
  const size_t bytes = count * element_size(dtype);
  if (auto b = direct(in, bytes, out, bytes)) {
    return engine_->submit(group_.get(), make_direct_reduce(call(w), *b, count, dtype, op, root));
  }
  if (auto b = cma_reduction(in, bytes, out, rules().reduce_cma)) {
    return engine_->submit(group_.get(), make_direct_reduce(call(w), *b, count, dtype, op, root));
  }
  engine_->submit(group_.get(), make_reduce(call(w), in, out, count, dtype, op, root));
}

void ShmBackend::broadcast(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                           int root) {
  const size_t bytes = count * element_size(dtype);
  auto b = direct(in, bytes, out, bytes);
  if (!b) b = cma(in, bytes, out, rules().broadcast_cma);
  if (b) {
    return engine_->submit(group_.get(), make_direct_broadcast(call(w), *b, count, dtype, root));
  }
  if (rules().root_on_huge_pages.applies(bytes, bytes)) {
    return engine_->submit(group_.get(),
                           make_cma_if_root_on_huge_pages(
                               call(w), in, bytes, root, [=](const CollectiveCall& c, bool cma) {
                                 return cma ? make_direct_broadcast(c, cma_buffers(in, out), count,
                                                                    dtype, root)
                                            : make_broadcast(c, in, out, count, dtype, root);
                               }));
  }
  engine_->submit(group_.get(), make_broadcast(call(w), in, out, count, dtype, root));
}

void ShmBackend::gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                        int root) {
  const size_t bytes = count * element_size(dtype);
  auto b = direct(in, bytes, out, bytes * group_size());
  if (!b) b = cma(in, bytes, out, rules().gather_cma);
  if (b) {
    return engine_->submit(group_.get(), make_direct_gather(call(w), *b, count, dtype, root));
  }
  engine_->submit(group_.get(), make_gather(call(w), in, out, count, dtype, root));
}

void ShmBackend::scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                         int root) {
  const size_t bytes = count * element_size(dtype);
  auto b = direct(in, bytes * group_size(), out, bytes);
  if (!b) b = cma(in, bytes, out, rules().scatter_cma);
  if (b) {
    return engine_->submit(group_.get(), make_direct_scatter(call(w), *b, count, dtype, root));
  }
  if (rules().root_on_huge_pages.applies(bytes, bytes * group_size())) {
    return engine_->submit(
        group_.get(),
        make_cma_if_root_on_huge_pages(
            call(w), in, bytes * group_size(), root, [=](const CollectiveCall& c, bool cma) {
              return cma ? make_direct_scatter(c, cma_buffers(in, out), count, dtype, root)
                         : make_scatter(c, in, out, count, dtype, root);
            }));
  }
  engine_->submit(group_.get(), make_scatter(call(w), in, out, count, dtype, root));
}

void ShmBackend::barrier(const WorkPtr& w) { engine_->submit(group_.get(), make_barrier(call(w))); }

void ShmBackend::all_to_all(const WorkPtr& w, const AllToAllInput& in, CountSpan send_counts,
                            void* out, CountSpan recv_counts, DType dtype) {
  const size_t esize = element_size(dtype);
  size_t sent = 0, received = 0;
  for (size_t c : send_counts) sent += c;
  for (size_t c : recv_counts) received += c;
  // Shared at every size (the counts differ per rank, so no size threshold could
  // agree); the op reads the pieces worth it in place and stages small ones.
  if (in.is_packed()) {
    std::optional<ArenaRef> shared_input;
    if (auto b = direct(in.packed, sent * esize, out, received * esize, 0))
      shared_input = b->in_ref;
    std::span<const ArenaRef> refs;
    if (shared_input) refs = std::span<const ArenaRef>(&*shared_input, 1);
    engine_->submit(group_.get(),
                    make_all_to_all(call(w), in, send_counts, out, recv_counts, dtype, refs));
    return;
  }
  engine_->submit(group_.get(),
                  make_all_to_all(call(w), in, send_counts, out, recv_counts, dtype,
                                  shared_pieces(in, send_counts, esize, out, received * esize)));
}

std::vector<ArenaRef, PoolAllocator<ArenaRef>> ShmBackend::shared_pieces(const AllToAllInput& in,
                                                                         CountSpan send_counts,
                                                                         size_t esize, void* out,
                                                                         size_t out_bytes) const {
  std::vector<ArenaRef, PoolAllocator<ArenaRef>> refs;
  const SharedArena& arena = SharedArena::instance();
  if (!arena.in_use()) return refs;
  if (out != nullptr && !arena.locate(out, out_bytes).present) return refs;
  refs.resize(send_counts.size());
  for (size_t j = 0; j < send_counts.size(); ++j) {
    if (send_counts[j] == 0) continue;  // read by nobody, wherever it points
    refs[j] = arena.locate(in.pieces[j], send_counts[j] * esize);
    if (!refs[j].present) return {};
  }
  return refs;
}

void ShmBackend::send(const WorkPtr& w, const void* in, size_t count, DType dtype, int peer,
                      int tag) {
  w->set_driver(engine_);
  SendRequest r;  // its Work is w, given alongside (ShmEngine::submit_send)
  r.dst = group_->world_rank(peer);
  r.group_id = group_->config().group_id;
  r.tag = tag;
  r.data = in;
  r.nbytes = count * element_size(dtype);
  r.dtype = dtype;
  r.timeout_seconds = group_->timeout_seconds();
  engine_->submit_send(w, std::move(r));
}

void ShmBackend::recv(const WorkPtr& w, void* out, size_t count, DType dtype, int peer, int tag) {
  w->set_driver(engine_);
  RecvRequest r;
  r.src = group_->world_rank(peer);
  r.group_id = group_->config().group_id;
  r.tag = tag;
  r.data = out;
  r.nbytes = count * element_size(dtype);
  r.dtype = dtype;
  r.timeout_seconds = group_->timeout_seconds();
  engine_->submit_recv(w, std::move(r));
}

void ShmBackend::drain() {
  engine_->drain(group_.get());
  // The group's last call was eager (step_op.h): this rank has not seen every
  // peer's call yet. Wait for them (with the group's deadline) and compare, so
  // that a mismatch is reported before the group goes away.
  std::optional<OpInfo> unchecked = engine_->unchecked_call(*group_);
  if (!unchecked) return;
  auto work = std::make_shared<Work>(std::move(*unchecked));
  work->set_driver(engine_);
  engine_->submit(group_.get(), make_unchecked_call_check(*group_, work));
  work->wait();
}

}  // namespace collie::detail
