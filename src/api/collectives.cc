// The rooted and unrooted collectives of comm_func (collie/comm.h).
#include <string>

#include "api/api_common.h"
#include "api/placeholder.h"
#include "runtime/shared_output.h"

namespace collie {

using collie::WorkPtr;
using detail::Backend;
using detail::finish;
using detail::lookup_for_op;
using detail::op_info;
using detail::OpKind;
using detail::to_group_rank;

std::pair<Tensor, CommHandle> all_reduce(const Tensor& tensor, ReduceOp op, std::string_view group,
                                         bool async_op) {
  auto g = lookup_for_op(group, "all_reduce");
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  Tensor out = detail::new_output_like(in);
  const size_t n = static_cast<size_t>(in.numel());
  WorkPtr w = g->submit(op_info(OpKind::AllReduce, in, n, op, -1, !async_op), {&in, &out},
                        [&](Backend& b, const WorkPtr& work) {
                          b.all_reduce(work, in.data_ptr(), out.data_ptr(), n, in.dtype(), op);
                        });
  return finish(std::move(out), w, async_op);
}

std::pair<Tensor, CommHandle> all_gather_into_tensor(const Tensor& tensor, std::string_view group,
                                                     bool async_op) {
  auto g = lookup_for_op(group, "all_gather_into_tensor");
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
  Tensor out = detail::new_output_rows(in, rows * g->size());
  const size_t n = static_cast<size_t>(in.numel());
  WorkPtr w = g->submit(op_info(OpKind::AllGather, in, n, ReduceOp::SUM, -1, !async_op), {&in, &out},
                        [&](Backend& b, const WorkPtr& work) {
                          b.all_gather(work, in.data_ptr(), out.data_ptr(), n, in.dtype());
                        });
  return finish(std::move(out), w, async_op);
}

std::pair<Tensor, CommHandle> reduce_scatter_tensor(const Tensor& tensor, ReduceOp op,
                                                    std::string_view group, bool async_op) {
  auto g = lookup_for_op(group, "reduce_scatter_tensor");
  if (tensor.dim() == 0) {
    throw ValueError("For reduce_scatter_tensor, the shape size of 'input_shape' can not be 0.");
  }
  const int64_t rows = g->rows_per_rank(tensor.size(0));
  if (rows < 0) {
    throw ValueError(
        "For reduce_scatter_tensor, the first dimension for 'input_shape' must be "
        "divided by 'rank_size', but got input_shape[0]: " +
        std::to_string(tensor.size(0)) + ", rank_size: " + std::to_string(g->size()));
  }
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  Tensor out = detail::new_output_rows(in, rows);
  const size_t n = static_cast<size_t>(out.numel());
  WorkPtr w = g->submit(op_info(OpKind::ReduceScatter, in, n, op, -1, !async_op), {&in, &out},
                        [&](Backend& b, const WorkPtr& work) {
                          b.reduce_scatter(work, in.data_ptr(), out.data_ptr(), n, in.dtype(), op);
                        });
  return finish(std::move(out), w, async_op);
}

Tensor reduce(const Tensor& tensor, int dst, ReduceOp op, std::string_view group) {
  auto g = lookup_for_op(group, "reduce");
  int root = to_group_rank(*g, dst, "reduce", "dst");
  bool is_root = g->rank() == root;
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  // comm_func.reduce gives non-destination ranks a shape-[1] placeholder.
  Tensor out = is_root ? detail::new_output_like(in) : detail::row_placeholder(tensor.dtype());
  const size_t n = static_cast<size_t>(in.numel());
  WorkPtr w = g->submit(op_info(OpKind::Reduce, in, n, op, root, true), {&in, &out},
                        [&](Backend& b, const WorkPtr& work) {
                          b.reduce(work, in.data_ptr(), is_root ? out.data_ptr() : nullptr, n,
                                   in.dtype(), op, root);
                        });
  return finish(std::move(out), w, false).first;
}

Tensor broadcast(const Tensor& tensor, int src, std::string_view group) {
  auto g = lookup_for_op(group, "broadcast");
  int root = to_group_rank(*g, src, "broadcast", "src");
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  Tensor out = detail::new_output_like(in);
  const size_t n = static_cast<size_t>(in.numel());
  WorkPtr w = g->submit(op_info(OpKind::Broadcast, in, n, ReduceOp::SUM, root, true), {&in, &out},
                        [&](Backend& b, const WorkPtr& work) {
                          b.broadcast(work, in.data_ptr(), out.data_ptr(), n, in.dtype(), root);
                        });
  return finish(std::move(out), w, false).first;
}

Tensor gather_into_tensor(const Tensor& tensor, int dst, std::string_view group) {
  auto g = lookup_for_op(group, "gather_into_tensor");
  int root = to_group_rank(*g, dst, "gather_into_tensor", "dst");
  bool is_root = g->rank() == root;
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
  Tensor out = is_root ? detail::new_output_rows(in, rows * g->size())
                       : detail::row_placeholder(tensor.dtype());
  const size_t n = static_cast<size_t>(in.numel());
  WorkPtr w = g->submit(op_info(OpKind::Gather, in, n, ReduceOp::SUM, root, true), {&in, &out},
                        [&](Backend& b, const WorkPtr& work) {
                          b.gather(work, in.data_ptr(), is_root ? out.data_ptr() : nullptr, n,
                                   in.dtype(), root);
                        });
  return finish(std::move(out), w, false).first;
}

Tensor scatter_tensor(const Tensor& tensor, int src, std::string_view group) {
  auto g = lookup_for_op(group, "scatter_tensor");
  int root = to_group_rank(*g, src, "scatter_tensor", "src");
  if (tensor.dim() == 0) throw ValueError("For scatter_tensor, 'input_shape' is empty. ");
  const int64_t rows = g->rows_per_rank(tensor.size(0));
  if (rows < 0) {
    throw ValueError(
        "For scatter_tensor, the first dimension for 'input_shape' must be divided by "
        "'rank_size', but got input_shape[0]: " +
        std::to_string(tensor.size(0)) + ", rank_size: " + std::to_string(g->size()));
  }
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  Tensor out = detail::new_output_rows(in, rows);
  const size_t n = static_cast<size_t>(out.numel());
  WorkPtr w = g->submit(op_info(OpKind::Scatter, in, n, ReduceOp::SUM, root, true), {&in, &out},
                        [&](Backend& b, const WorkPtr& work) {
                          b.scatter(work, in.data_ptr(), out.data_ptr(), n, in.dtype(), root);
                        });
  return finish(std::move(out), w, false).first;
}

void barrier(std::string_view group) {
  auto g = lookup_for_op(group, "barrier");
  detail::OpInfo info;
  info.kind = OpKind::Barrier;
  info.blocking = true;
  WorkPtr w = g->submit(info, {}, [&](Backend& b, const WorkPtr& work) { b.barrier(work); });
  w->wait();
}

}  // namespace collie
