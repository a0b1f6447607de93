#include "backends/shm/shm_backend.h"

#include "backends/shm/collectives.h"

namespace collie::detail {

ShmBackend::ShmBackend(std::shared_ptr<ShmEngine> engine, std::shared_ptr<ShmGroup> group)
    : engine_(std::move(engine)), group_(std::move(group)) {}

ShmBackend::~ShmBackend() {
  // The engine holds a raw pointer to the group while it has queued operations.
  engine_->detach(group_.get());
}

void ShmBackend::all_reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                            ReduceOp op) {
  engine_->submit(group_.get(), make_all_reduce(call(w), in, out, count, dtype, op));
}

void ShmBackend::all_gather(const WorkPtr& w, const void* in, void* out, size_t count,
                            DType dtype) {
  engine_->submit(group_.get(), make_all_gather(call(w), in, out, count, dtype));
}

void ShmBackend::reduce_scatter(const WorkPtr& w, const void* in, void* out, size_t count,
                                DType dtype, ReduceOp op) {
  engine_->submit(group_.get(), make_reduce_scatter(call(w), in, out, count, dtype, op));
}

void ShmBackend::reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                        ReduceOp op, int root) {
  engine_->submit(group_.get(), make_reduce(call(w), in, out, count, dtype, op, root));
}

void ShmBackend::broadcast(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                           int root) {
  engine_->submit(group_.get(), make_broadcast(call(w), in, out, count, dtype, root));
}

void ShmBackend::gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                        int root) {
  engine_->submit(group_.get(), make_gather(call(w), in, out, count, dtype, root));
}

void ShmBackend::scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                         int root) {
  engine_->submit(group_.get(), make_scatter(call(w), in, out, count, dtype, root));
}

void ShmBackend::barrier(const WorkPtr& w) { engine_->submit(group_.get(), make_barrier(call(w))); }

void ShmBackend::all_to_all(const WorkPtr& w, const void* in,
                            const std::vector<size_t>& send_counts, void* out,
                            const std::vector<size_t>& recv_counts, DType dtype) {
  engine_->submit(group_.get(), make_all_to_all(call(w), in, send_counts, out, recv_counts, dtype));
}

void ShmBackend::send(const WorkPtr& w, const void* in, size_t count, DType dtype, int peer,
                      int tag) {
  w->set_driver(engine_);
  SendRequest r;
  r.work = w;
  r.dst = group_->world_rank(peer);
  r.group_id = group_->config().group_id;
  r.tag = tag;
  r.data = in;
  r.nbytes = count * element_size(dtype);
  r.dtype = dtype;
  r.timeout_seconds = group_->timeout_seconds();
  engine_->submit_send(std::move(r));
}

void ShmBackend::recv(const WorkPtr& w, void* out, size_t count, DType dtype, int peer, int tag) {
  w->set_driver(engine_);
  RecvRequest r;
  r.work = w;
  r.src = group_->world_rank(peer);
  r.group_id = group_->config().group_id;
  r.tag = tag;
  r.data = out;
  r.nbytes = count * element_size(dtype);
  r.dtype = dtype;
  r.timeout_seconds = group_->timeout_seconds();
  engine_->submit_recv(std::move(r));
}

void ShmBackend::drain() { engine_->drain(group_.get()); }

}  // namespace collie::detail
