#include "backends/mpi/mpi_backend.h"

#include "backends/mpi/operations.h"

namespace collie::detail {

MpiBackend::MpiBackend(MpiEngine& engine, std::shared_ptr<MpiGroup> group, ReductionMode mode)
    : engine_(engine), group_(std::move(group)), mode_(mode) {
  engine_.attach(group_);
}

MpiBackend::~MpiBackend() {
  group_->wait_drained();
  engine_.detach(group_);
}

void MpiBackend::all_reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                            ReduceOp op) {
  collective(make_all_reduce(*group_, mode_, w, in, out, count, dtype, op));
}

void MpiBackend::all_gather(const WorkPtr& w, const void* in, void* out, size_t count,
                            DType dtype) {
  collective(make_all_gather(*group_, w, in, out, count, dtype));
}

void MpiBackend::reduce_scatter(const WorkPtr& w, const void* in, void* out, size_t count,
                                DType dtype, ReduceOp op) {
  collective(make_reduce_scatter(*group_, mode_, w, in, out, count, dtype, op));
}

void MpiBackend::reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                        ReduceOp op, int root) {
  collective(make_reduce(*group_, mode_, w, in, out, count, dtype, op, root));
}

void MpiBackend::broadcast(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                           int root) {
  collective(make_broadcast(*group_, w, in, out, count, dtype, root));
}

void MpiBackend::gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                        int root) {
  collective(make_gather(*group_, w, in, out, count, dtype, root));
}

void MpiBackend::scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                         int root) {
  collective(make_scatter(*group_, w, in, out, count, dtype, root));
}

void MpiBackend::barrier(const WorkPtr& w) { collective(make_barrier(*group_, w)); }

void MpiBackend::all_to_all(const WorkPtr& w, const AllToAllInput& in, CountSpan send_counts,
                            void* out, CountSpan recv_counts, DType dtype) {
  collective(make_all_to_all(*group_, w, in, send_counts, out, recv_counts, dtype));
}

void MpiBackend::send(const WorkPtr& w, const void* in, size_t count, DType dtype, int peer,
                      int tag) {
  engine_.submit_p2p(group_, make_send(*group_, w, in, count, dtype, peer, tag, engine_.tag_ub()),
                     peer,
                     /*is_send=*/true);
}

void MpiBackend::recv(const WorkPtr& w, void* out, size_t count, DType dtype, int peer, int tag) {
  engine_.submit_p2p(group_, make_recv(*group_, w, out, count, dtype, peer, tag, engine_.tag_ub()),
                     peer,
                     /*is_send=*/false);
}

void MpiBackend::drain() { group_->wait_drained(); }

}  // namespace collie::detail
