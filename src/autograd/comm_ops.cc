// The tape's differentiable communication ops (collie/autograd.h). Each runs the collie op
// forward and records the rule from the rule table — the same rule get_bprop returns —
// so the tape and a language binding can never disagree. Rules are looked up before the
// forward runs, so bad attributes fail before any traffic.
#include <string>

#include "autograd/tape_internal.h"
#include "autograd/tensor_math.h"
#include "collie/errors.h"

namespace collie::autograd {
namespace {

using detail::record;
using detail::record1;

std::string str(std::string_view s) { return std::string(s); }
AttrValue op_attr(ReduceOp op) { return std::string(reduce_op_name(op)); }

// A node for a one-input one-output op whose rule takes ([x], [y], [dy]).
Variable unary_comm(const char* name, const Variable& x, const Tensor& y, const Bprop& rule) {
  Tensor xv = x.value();
  return record1(name, true, {x}, y,
                 [rule, xv, y](const TensorList& g) { return rule({xv}, {y}, g); });
}

std::vector<int64_t> as_int64(const std::vector<int>& v) { return {v.begin(), v.end()}; }

}  // namespace

Variable all_reduce(const Variable& x, ReduceOp op, std::string_view group) {
  Bprop rule = get_bprop("all_reduce", {{"op", op_attr(op)}, {"group", str(group)}});
  return unary_comm("all_reduce", x, collie::all_reduce(x.value(), op, group).first, rule);
}

Variable all_reduce_invariant(const Variable& x, std::string_view group) {
  Bprop rule = get_bprop("all_reduce_invariant", {{"group", str(group)}});
  return unary_comm("all_reduce_invariant", x,
                    collie::all_reduce(x.value(), ReduceOp::SUM, group).first, rule);
}

Variable all_gather_into_tensor(const Variable& x, std::string_view group, bool mean_flag) {
  Bprop rule =
      get_bprop("all_gather_into_tensor", {{"group", str(group)}, {"mean_flag", mean_flag}});
  return unary_comm("all_gather_into_tensor", x,
                    collie::all_gather_into_tensor(x.value(), group).first, rule);
}

Variable reduce_scatter_tensor(const Variable& x, ReduceOp op, std::string_view group) {
  Bprop rule = get_bprop("reduce_scatter_tensor", {{"op", op_attr(op)}, {"group", str(group)}});
  return unary_comm("reduce_scatter_tensor", x,
                    collie::reduce_scatter_tensor(x.value(), op, group).first, rule);
}

Variable broadcast(const Variable& x, int src, std::string_view group) {
  Bprop rule = get_bprop("broadcast", {{"src", int64_t{src}}, {"group", str(group)}});
  return unary_comm("broadcast", x, collie::broadcast(x.value(), src, group), rule);
}

Variable reduce(const Variable& x, int dst, ReduceOp op, std::string_view group) {
  Bprop rule =
      get_bprop("reduce", {{"dst", int64_t{dst}}, {"op", op_attr(op)}, {"group", str(group)}});
  return unary_comm("reduce", x, collie::reduce(x.value(), dst, op, group), rule);
}

Variable gather_into_tensor(const Variable& x, int dst, std::string_view group) {
  Bprop rule = get_bprop("gather_into_tensor", {{"dst", int64_t{dst}}, {"group", str(group)}});
  return unary_comm("gather_into_tensor", x, collie::gather_into_tensor(x.value(), dst, group),
                    rule);
}

Variable scatter_tensor(const Variable& x, int src, std::string_view group) {
  Bprop rule = get_bprop("scatter_tensor", {{"src", int64_t{src}}, {"group", str(group)}});
  return unary_comm("scatter_tensor", x, collie::scatter_tensor(x.value(), src, group), rule);
}

Variable all_to_all(const Variable& x, int64_t split_dim, int64_t concat_dim,
                    std::string_view group) {
  Bprop rule = get_bprop(
      "all_to_all", {{"split_dim", split_dim}, {"concat_dim", concat_dim}, {"group", str(group)}});
  return unary_comm("all_to_all", x, collie::all_to_all(x.value(), split_dim, concat_dim, group),
                    rule);
}

Variable all_to_all_v(const Variable& x, const std::vector<int64_t>& send_numel_list,
                      const std::vector<int64_t>& recv_numel_list, std::string_view group) {
  Bprop rule = get_bprop("all_to_all_v", {{"send_numel_list", send_numel_list},
                                          {"recv_numel_list", recv_numel_list},
                                          {"group", str(group)}});
  return unary_comm("all_to_all_v", x,
                    collie::all_to_all_v(x.value(), send_numel_list, recv_numel_list, group), rule);
}

Variable all_to_all_single_with_output_shape(const Shape& output_shape, const Variable& x,
                                             const std::vector<int64_t>& output_split_sizes,
                                             const std::vector<int64_t>& input_split_sizes,
                                             std::string_view group) {
  Bprop rule =
      get_bprop("all_to_all_single_with_output_shape", {{"output_split_sizes", output_split_sizes},
                                                        {"input_split_sizes", input_split_sizes},
                                                        {"group", str(group)}});
  Tensor y = collie::all_to_all_single_with_output_shape(
                 output_shape, x.value(), output_split_sizes, input_split_sizes, group)
                 .first;
  return unary_comm("all_to_all_single_with_output_shape", x, y, rule);
}

std::vector<Variable> all_to_all_with_output_shape(const std::vector<Shape>& output_shape_list,
                                                   const std::vector<Variable>& inputs,
                                                   std::string_view group) {
  Bprop rule = get_bprop("all_to_all_with_output_shape", {{"group", str(group)}});
  TensorList xs;
  for (const Variable& v : inputs) xs.push_back(v.value());
  TensorList ys = collie::all_to_all_with_output_shape(output_shape_list, xs, group).first;
  return record("all_to_all_with_output_shape", true, inputs, ys,
                [rule, xs, ys](const TensorList& g) { return rule(xs, ys, g); });
}

Variable all_to_all_v_c(const Variable& output, const Variable& x,
                        const std::vector<int64_t>& send_count_matrix, std::string_view group) {
  Bprop rule = get_bprop("all_to_all_v_c",
                         {{"send_count_matrix", send_count_matrix}, {"group", str(group)}});
  Tensor xv = x.value(), prior = output.value();
  Tensor y = prior.clone();  // all_to_all_v_c writes into its output: never into the caller's value
  collie::all_to_all_v_c(y, xv, send_count_matrix, group);
  return record1("all_to_all_v_c", true, {x, output}, y, [rule, xv, prior, y](const TensorList& g) {
    return rule({xv, prior}, {y}, g);
  });
}

Variable all_gather_v(const Variable& x, std::string_view group) {
  std::vector<int64_t> rows;
  Tensor y = collie::all_gather_v(x.value(), group, &rows);
  // The counts are known now; the rule need not gather them again.
  Bprop rule = get_bprop("all_gather_v", {{"rows_per_rank", rows}, {"group", str(group)}});
  return unary_comm("all_gather_v", x, y, rule);
}

Variable reduce_scatter_v(const Variable& x, const std::vector<int64_t>& rows_per_rank,
                          std::string_view group) {
  Bprop rule =
      get_bprop("reduce_scatter_v", {{"rows_per_rank", rows_per_rank}, {"group", str(group)}});
  return unary_comm("reduce_scatter_v", x,
                    collie::reduce_scatter_v(x.value(), rows_per_rank, group), rule);
}

Variable send(const Variable& x, int dst, std::string_view group, int tag) {
  Bprop rule =
      get_bprop("send", {{"dst", int64_t{dst}}, {"tag", int64_t{tag}}, {"group", str(group)}});
  collie::send(x.value(), dst, group, tag);
  Tensor token = Tensor::scalar(0, x.dtype());
  return unary_comm("send", x, token, rule);
}

Variable recv(const Shape& shape, DType dtype, int src, std::string_view group, int tag) {
  Bprop rule =
      get_bprop("recv", {{"src", int64_t{src}}, {"tag", int64_t{tag}}, {"group", str(group)}});
  Tensor y = collie::recv(Tensor::zeros(shape, dtype), src, group, tag);
  return record1("recv", true, {}, y, [rule, y](const TensorList& g) { return rule({}, {y}, g); });
}

P2P P2P::isend(Variable x, int peer, std::string_view group, int tag) {
  P2P op;
  op.is_send = true;
  op.dtype = x.dtype();
  op.shape = x.shape();
  op.tensor = std::move(x);
  op.peer = peer;
  op.group = str(group);
  op.tag = tag;
  return op;
}

P2P P2P::irecv(Shape shape, DType dtype, int peer, std::string_view group, int tag) {
  P2P op;
  op.is_send = false;
  op.shape = std::move(shape);
  op.dtype = dtype;
  op.peer = peer;
  op.group = str(group);
  op.tag = tag;
  return op;
}

std::vector<Variable> batch_isend_irecv(const std::vector<P2P>& ops) {
  if (ops.empty()) throw TypeError("p2p_op_list can not be empty list.");
  std::vector<std::string> kinds;
  std::vector<int64_t> peers, tags;
  for (const P2P& op : ops) {
    kinds.push_back(op.is_send ? "isend" : "irecv");
    peers.push_back(op.peer);
    tags.push_back(op.tag);
    if (op.group != ops[0].group) {
      throw ValueError("autograd::batch_isend_irecv: every op must use the same group");
    }
  }
  Bprop rule =
      get_bprop("batch_isend_irecv",
                {{"ops", kinds}, {"peers", peers}, {"tags", tags}, {"group", ops[0].group}});
  std::vector<P2POp> forward;
  std::vector<Variable> inputs;
  TensorList xs;  // one per op: the data of an isend, a zero template of an irecv
  for (const P2P& op : ops) {
    if (op.is_send) {
      forward.emplace_back("isend", op.tensor.value(), op.peer, op.group, op.tag);
      inputs.push_back(op.tensor);
      xs.push_back(op.tensor.value());
    } else {
      forward.emplace_back("irecv", op.shape, op.peer, op.group, op.tag, op.dtype);
      xs.push_back(Tensor::zeros(op.shape, op.dtype));
    }
  }
  TensorList ys = collie::batch_isend_irecv(forward);
  std::vector<bool> is_send;
  for (const P2P& op : ops) is_send.push_back(op.is_send);
  // The node's inputs are the isend Variables only; the rule answers one per op.
  return record("batch_isend_irecv", true, inputs, ys,
                [rule, xs, ys, is_send](const TensorList& g) {
                  TensorList all = rule(xs, ys, g), dx;
                  for (size_t i = 0; i < all.size(); ++i) {
                    if (is_send[i]) dx.push_back(all[i]);
                  }
                  return dx;
                });
}

std::vector<Variable> neighbor_exchange(const std::vector<Variable>& inputs,
                                        const std::vector<int>& send_rank_ids,
                                        const std::vector<int>& recv_rank_ids,
                                        const std::vector<Shape>& recv_shapes,
                                        std::string_view group, DType recv_type) {
  Bprop rule = get_bprop("neighbor_exchange", {{"send_rank_ids", as_int64(send_rank_ids)},
                                               {"recv_rank_ids", as_int64(recv_rank_ids)},
                                               {"recv_shapes", recv_shapes},
                                               {"group", str(group)}});
  TensorList xs;
  for (const Variable& v : inputs) xs.push_back(v.value());
  TensorList ys =
      collie::neighbor_exchange(xs, send_rank_ids, recv_rank_ids, recv_shapes, group, recv_type);
  return record("neighbor_exchange", true, inputs, ys,
                [rule, xs, ys](const TensorList& g) { return rule(xs, ys, g); });
}

Variable neighbor_exchange_v2(const Variable& x, const HaloSpec& spec, std::string_view group) {
  Bprop rule = get_bprop("neighbor_exchange_v2", {{"send_rank_ids", as_int64(spec.send_rank_ids)},
                                                  {"send_lens", spec.send_lens},
                                                  {"recv_rank_ids", as_int64(spec.recv_rank_ids)},
                                                  {"recv_lens", spec.recv_lens},
                                                  {"group", str(group)}});
  return unary_comm("neighbor_exchange_v2", x, collie::neighbor_exchange_v2(x.value(), spec, group),
                    rule);
}

Variable mirror(const Variable& x, std::string_view group, bool mean_flag) {
  Bprop rule = get_bprop("mirror", {{"group", str(group)}, {"mean_flag", mean_flag}});
  return unary_comm("mirror", x, x.value(), rule);
}

Variable virtual_div(const Variable& x, double divisor) {
  Bprop rule = get_bprop("virtual_div", {{"divisor", divisor}});
  // Local: recorded only when x requires grad, like the other local ops.
  return record1("virtual_div", false, {x}, x.value(),
                 [rule](const TensorList& g) { return rule({}, {}, g); });
}

}  // namespace collie::autograd
