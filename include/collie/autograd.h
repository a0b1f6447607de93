// collie/autograd.h — gradients through communication: one rule per collective, and a tape.
//
// What it is for. Training code differentiates programs that communicate: data-parallel
// gradient sync, tensor/pipeline parallel layers, halo exchanges. This header gives
//   1. get_bprop(op, attrs): the backward rule (vector-Jacobian product) of every
//      collie/MindSpore communication op, as a callable (x, out, dout) -> dx on Tensors —
//      the C++ counterpart of MindSpore's bprop registry (grad_comm_ops.py), with its
//      mathematical faults fixed (docs/autograd.md lists each difference);
//   2. a small tape: Variables, local ops to write a loss, the differentiable collectives,
//      and Tape::backward().
//
// The convention (it decides every rule): the objective is the SUM OF THE PER-RANK LOSSES,
// L = sum_r loss_r. Each rank seeds its own cotangent; the backward of a linear collective
// C is its adjoint C^T (sum_r <dy_r, (C x)_r> = sum_r <(C^T dy)_r, x_r>), itself a
// collective. So every rank must run the backward of every collective it ran forward, in
// the same order — a backward is as collective as its forward. A replicated loss computed
// on N ranks counts N times under this convention; divide by N, or use mirror(mean=true)
// for data-parallel averaging (see docs/autograd.md).
//
// Example (run on N ranks; data-parallel gradient of a replicated weight):
//   namespace ag = collie::autograd;
//   ag::Variable w(collie::Tensor::ones({4, 2}, collie::DType::Float64), /*requires_grad=*/true);
//   ag::Variable x(local_batch);                                // [b, 4], different per rank
//   ag::Tape tape;                                              // records while alive
//   auto loss = ag::mean(ag::square(ag::matmul(x, ag::mirror(w, collie::WORLD, /*mean=*/true))));
//   tape.backward(loss);                                        // every rank calls it
//   collie::Tensor g = w.grad();                                // same on every rank
//
//   // A rule by itself: the cotangent of all_reduce(x, PROD) — finite where x == 0.
//   auto bprop = ag::get_bprop("all_reduce", {{"op", std::string("prod")}});
//   collie::Tensor dx = bprop(x_tensor, y_tensor, dy_tensor);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "collie/comm.h"
#include "collie/comm_ext.h"
#include "collie/runtime.h"
#include "collie/tensor.h"

namespace collie::autograd {

// ======================================================================================
// 1. Rules
// ======================================================================================

using TensorList = std::vector<Tensor>;

// One attribute of an op: ranks, tags and dims are int64; reduce ops and groups strings
// ("sum", "prod", "min", "max"); split sizes and count matrices int64 lists; shape lists
// std::vector<Shape>.
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<std::string>, std::vector<Shape>>;
using Attrs = std::map<std::string, AttrValue, std::less<>>;

// A backward rule bound to one op's attributes: dx = bprop(x, out, dout), where x are the
// forward inputs, out the forward outputs and dout the cotangents of the outputs, each a
// list in the op's order (most ops: one tensor each). It is collective: every rank of the
// op's group calls it. Copies share state (only the mini-step rules have any).
class Bprop {
 public:
  using Fn =
      std::function<TensorList(const TensorList& x, const TensorList& out, const TensorList& dout)>;
  Bprop() = default;
  Bprop(std::string op, Fn fn) : op_(std::move(op)), fn_(std::move(fn)) {}

  // An empty list must be spelled TensorList{} (a bare {} could also be a Tensor).
  TensorList operator()(const TensorList& x, const TensorList& out, const TensorList& dout) const;
  // For ops with one input and one output: ValueError if the rule returns another count.
  Tensor operator()(const Tensor& x, const Tensor& out, const Tensor& dout) const;

  const std::string& op() const { return op_; }
  explicit operator bool() const { return static_cast<bool>(fn_); }

 private:
  std::string op_;
  Fn fn_;
};

// The rule of `op_name` (a collie name such as "all_reduce", or MindSpore's primitive name
// such as "AllReduce", "_MirrorOperator") with its attributes. Unknown ops, unknown or
// mistyped attributes: ValueError naming the accepted ones. Ops whose backward collie does
// not define (reduce_scatter with a non-SUM op): RuntimeError, here rather than a silently
// wrong gradient later. Groups default to WORLD; ranks in attributes are world ranks.
Bprop get_bprop(std::string_view op_name, const Attrs& attrs = {});

// One row of the rule table (for documentation, tests and language bindings).
struct RuleInfo {
  std::string name;                  // collie name, the key of get_bprop
  std::vector<std::string> aliases;  // MindSpore primitive names with the same rule
  std::vector<std::string> attrs;    // accepted attribute names
  std::string lists;                 // what x, out, dout and dx hold
  std::string backward;              // the rule, one line
  std::string vs_mindspore;          // how MindSpore's rule differs ("" if it does not)
};
// Every op with a rule, in documentation order.
const std::vector<RuleInfo>& rule_table();

// ======================================================================================
// 2. The tape
// ======================================================================================

namespace detail {
struct VarImpl;
class TapeImpl;
}  // namespace detail

// A tensor that gradients can flow to. Copies share the value and the gradient.
// Local ops need float32 or float64 values (float16/bfloat16 compute in float32).
class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor value, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  const Tensor& value() const;
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }
  bool requires_grad() const;
  // The gradient accumulated by Tape::backward into this leaf (a leaf: made by the user,
  // not by an op). Zeros of the value's shape when none has arrived.
  Tensor grad() const;
  bool has_grad() const;
  void zero_grad();
  // Replaces a leaf's value (an optimizer step); shape and dtype must stay the same.
  void set_value(const Tensor& value);

  const std::shared_ptr<detail::VarImpl>& impl() const { return impl_; }
  explicit Variable(std::shared_ptr<detail::VarImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::VarImpl> impl_;
};

// Records the ops run while it is alive (on this thread; an inner Tape hides an outer one
// until destroyed). Local ops are recorded when an input requires grad; collectives are
// ALWAYS recorded, and their outputs require grad, because a rank whose own inputs need no
// gradient still has to take part in the backward collective that other ranks need.
class Tape {
 public:
  Tape();
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // Runs the recorded ops backwards from `loss` (seeded with ones) and accumulates the
  // gradients into the leaves that require grad. Collective: every rank must call one of
  // the backward() forms, even a rank with no loss of its own. Every recorded collective
  // runs its rule, in reverse recording order, with zero cotangents where none arrived.
  // Afterwards the tape is empty; calling backward again raises RuntimeError.
  void backward(const Variable& loss);
  // Several roots, each seeded with the matching tensor in `seeds` (ones when omitted).
  void backward(const std::vector<Variable>& roots, const std::vector<Tensor>& seeds = {});
  // This rank contributes no loss term but takes part in the backward collectives.
  void backward();

  // Number of recorded ops.
  size_t size() const;

 private:
  std::unique_ptr<detail::TapeImpl> impl_;
};

// ---- local ops (float32/float64; add/sub/mul broadcast like numpy) ----
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable scale(const Variable& a, double factor);
Variable matmul(const Variable& a, const Variable& b);  // [m, k] x [k, n]
Variable sum(const Variable& a);                        // all elements -> 0-d
Variable mean(const Variable& a);                       // all elements -> 0-d
Variable square(const Variable& a);
Variable sin(const Variable& a);
Variable exp(const Variable& a);
Variable relu(const Variable& a);
Variable reshape(const Variable& a, const Shape& shape);
Variable slice(const Variable& a, int64_t dim, int64_t start, int64_t end);
Variable cat(const std::vector<Variable>& parts, int64_t dim = 0);

Variable operator+(const Variable& a, const Variable& b);
Variable operator-(const Variable& a, const Variable& b);
Variable operator*(const Variable& a, const Variable& b);

// ---- differentiable communication (forward = the collie op of the same name) ----
Variable all_reduce(const Variable& x, ReduceOp op = ReduceOp::SUM, std::string_view group = WORLD);
// Forward all_reduce SUM whose output is treated as ONE replicated value: its backward is
// the identity (Megatron's g, JAX psum_invariant). Correct only when the cotangents that
// reach it are the same on every rank and counted once.
Variable all_reduce_invariant(const Variable& x, std::string_view group = WORLD);
Variable all_gather_into_tensor(const Variable& x, std::string_view group = WORLD,
                                bool mean_flag = false);
Variable reduce_scatter_tensor(const Variable& x, ReduceOp op = ReduceOp::SUM,
                               std::string_view group = WORLD);
Variable broadcast(const Variable& x, int src = 0, std::string_view group = WORLD);
// Non-destination ranks get MindSpore's shape-[1] placeholder, a constant: its cotangent is
// ignored, and every rank gets a gradient of x's shape.
Variable reduce(const Variable& x, int dst, ReduceOp op = ReduceOp::SUM,
                std::string_view group = WORLD);
Variable gather_into_tensor(const Variable& x, int dst = 0, std::string_view group = WORLD);
Variable scatter_tensor(const Variable& x, int src = 0, std::string_view group = WORLD);
Variable all_to_all(const Variable& x, int64_t split_dim, int64_t concat_dim,
                    std::string_view group = WORLD);
Variable all_to_all_v(const Variable& x, const std::vector<int64_t>& send_numel_list,
                      const std::vector<int64_t>& recv_numel_list, std::string_view group = WORLD);
Variable all_to_all_single_with_output_shape(const Shape& output_shape, const Variable& x,
                                             const std::vector<int64_t>& output_split_sizes = {},
                                             const std::vector<int64_t>& input_split_sizes = {},
                                             std::string_view group = WORLD);
std::vector<Variable> all_to_all_with_output_shape(const std::vector<Shape>& output_shape_list,
                                                   const std::vector<Variable>& inputs,
                                                   std::string_view group = WORLD);
// Rows of `x` go out by send_count_matrix (comm.h all_to_all_v_c) into a copy of `output`
// (rows not written keep output's values, and their gradient flows to `output`).
Variable all_to_all_v_c(const Variable& output, const Variable& x,
                        const std::vector<int64_t>& send_count_matrix,
                        std::string_view group = WORLD);
Variable all_gather_v(const Variable& x, std::string_view group = WORLD);
Variable reduce_scatter_v(const Variable& x, const std::vector<int64_t>& rows_per_rank,
                          std::string_view group = WORLD);

// Differentiable point-to-point ops take user tags in [0, kMaxDifferentiableTag); their
// gradients travel on kReservedTagBase + tag (ValueError for other tags).
inline constexpr int kMaxDifferentiableTag = 1 << 29;

// send returns a 0-d zero "token": a rank whose only link to the loss is a send just calls
// tape.backward() (or adds the token to its loss); the send's backward receives x's
// cotangent from dst.
Variable send(const Variable& x, int dst, std::string_view group = WORLD, int tag = 0);
Variable recv(const Shape& shape, DType dtype, int src, std::string_view group = WORLD,
              int tag = 0);

// One operation of the differentiable batch_isend_irecv.
struct P2P {
  static P2P isend(Variable x, int peer, std::string_view group = WORLD, int tag = 0);
  static P2P irecv(Shape shape, DType dtype, int peer, std::string_view group = WORLD, int tag = 0);
  bool is_send = true;
  Variable tensor;  // isend: the data
  Shape shape;      // irecv: what to receive
  DType dtype = DType::Float32;
  int peer = 0;
  std::string group{WORLD};
  int tag = 0;
};
// One output per op: the received tensor for irecv, a 0-d token for isend.
std::vector<Variable> batch_isend_irecv(const std::vector<P2P>& ops);

std::vector<Variable> neighbor_exchange(const std::vector<Variable>& inputs,
                                        const std::vector<int>& send_rank_ids,
                                        const std::vector<int>& recv_rank_ids,
                                        const std::vector<Shape>& recv_shapes,
                                        std::string_view group = WORLD,
                                        DType recv_type = DType::Float32);
Variable neighbor_exchange_v2(const Variable& x, const HaloSpec& spec,
                              std::string_view group = WORLD);

// Identity forward on a replicated parameter; backward all_reduce SUM of the cotangent over
// `group` (x1/N with mean_flag): data-parallel gradient sync (MindSpore _MirrorOperator).
Variable mirror(const Variable& x, std::string_view group = WORLD, bool mean_flag = false);
// Identity forward; backward divides the cotangent by `divisor` (MindSpore _VirtualDiv, a
// loss-scaling device, not the derivative of its forward).
Variable virtual_div(const Variable& x, double divisor);

}  // namespace collie::autograd
