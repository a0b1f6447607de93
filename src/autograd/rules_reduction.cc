// Rules of the all-reducing ops: all_reduce (sum, prod, max, min; dense and row-sparse
// cotangents), all_reduce_invariant, mirror, virtual_div, the mini-step accumulators,
// and barrier.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "autograd/rule_util.h"
#include "autograd/rules.h"
#include "autograd/tensor_math.h"

namespace collie::autograd::detail {
namespace {

// PROD: dx_r = (sum_j dy_j) * prod_{k != r} x_k. One all_gather of [x, dy] gives every
// rank all x_k and all dy_j; the product of the others comes from a prefix and a suffix
// product, so a zero in x_r never divides anything (MindSpore divides by x: NaN at 0).
Tensor prod_rule(const Tensor& x, const Tensor& dy, const std::string& group) {
  require_floating(x, "all_reduce(prod)");
  expect_dtype(x, dy, "all_reduce(prod)");
  expect_shape(dy, x.shape(), "all_reduce(prod)", "dout");
  const int64_t n = x.numel();
  Tensor both = cat_dim({flatten(x), flatten(dy)}, 0).reshape({1, 2 * n});
  Tensor gathered = collie::all_gather_into_tensor(both, group).first;  // [N, 2n]
  Tensor s = sum_rows(narrow(gathered, 1, n, n));
  Tensor others = product_of_others(narrow(gathered, 1, 0, n), get_rank(group));
  return mul(s, others).reshape(x.shape());
}

// MAX/MIN: the summed cotangent goes to the ranks whose x equals the result, split
// evenly among them (mass conserved at ties; MindSpore gives each tied rank all of it).
// One all_reduce carries [dy, mask], giving the sum and the tie count together.
Tensor extremum_rule(const Tensor& x, const Tensor& y, const Tensor& dy, const std::string& group) {
  require_floating(x, "all_reduce(max/min)");
  expect_shape(y, x.shape(), "all_reduce(max/min)", "out");
  expect_shape(dy, x.shape(), "all_reduce(max/min)", "dout");
  expect_dtype(x, dy, "all_reduce(max/min)");
  const int64_t n = x.numel();
  Tensor mask = equal_mask(x, y);
  Tensor summed =
      collie::all_reduce(cat_dim({flatten(dy), flatten(mask)}, 0), ReduceOp::SUM, group).first;
  Tensor s = narrow(summed, 0, 0, n).contiguous();
  Tensor count = narrow(summed, 0, n, n).contiguous();
  return split_evenly(s, flatten(mask), count).reshape(x.shape());
}

// A row-sparse cotangent [indices, values]: gather both with uneven sizes; the rows of all
// ranks together are the sum. Returned coalesced, optionally scaled.
TensorList sparse_sum(const TensorList& x, const TensorList& dout, const std::string& group,
                      double factor) {
  Shape dense = dout[1].shape();
  if (!x.empty()) {
    dense = x[0].shape();
  } else {
    int64_t rows = 0;
    for (double v : dout[0].to_double_vector()) rows = std::max(rows, static_cast<int64_t>(v) + 1);
    dense[0] = rows;
  }
  RowTensor total = collie::all_reduce_rows({dout[0], dout[1], dense}, group);
  if (factor != 1.0) total.values = scale(total.values, factor);
  return {total.indices, total.values};
}

// State of a mini-step accumulator, shared by copies of its Bprop.
struct Accumulation {
  std::optional<Tensor> sum;
  int64_t calls = 0;
};

}  // namespace

Bprop::Fn make_all_reduce(const AttrReader& a) {
  const ReduceOp op = a.reduce_op();
  const std::string group = a.group();
  return [op, group](const TensorList& x, const TensorList& out,
                     const TensorList& dout) -> TensorList {
    if (dout.size() == 2) {
      if (op != ReduceOp::SUM) {
        throw ValueError(
            "bprop of all_reduce: a row-sparse cotangent [indices, values] needs op=sum, got " +
            std::string(reduce_op_name(op)));
      }
      return sparse_sum(x, dout, group, 1.0);
    }
    const Tensor& dy = one(dout, "all_reduce", "dout");
    switch (op) {
      case ReduceOp::SUM:
        require_floating(dy, "all_reduce");
        return {collie::all_reduce(dy, ReduceOp::SUM, group).first};
      case ReduceOp::PROD:
        return {prod_rule(one(x, "all_reduce", "x"), dy, group)};
      case ReduceOp::MAX:
      case ReduceOp::MIN:
        return {extremum_rule(one(x, "all_reduce", "x"), one(out, "all_reduce", "out"), dy, group)};
    }
    return {};
  };
}

Bprop::Fn make_all_reduce_invariant(const AttrReader& a) {
  (void)a.group();  // accepted for symmetry; the rule communicates nothing
  return [](const TensorList&, const TensorList&, const TensorList& dout) -> TensorList {
    return {one(dout, "all_reduce_invariant", "dout")};
  };
}

Bprop::Fn make_mirror(const AttrReader& a) {
  const std::string group = a.group();
  const bool mean = a.get_bool("mean_flag", false);
  const std::optional<int64_t> dev_num =
      a.has("dev_num") ? std::optional<int64_t>(a.get_int("dev_num")) : std::nullopt;
  if (dev_num && *dev_num < 1)
    throw ValueError("get_bprop(\"mirror\"): dev_num must be at least 1");
  return [group, mean, dev_num](const TensorList& x, const TensorList&,
                                const TensorList& dout) -> TensorList {
    const int64_t n = dev_num ? *dev_num : get_group_size(group);
    if (n == 1) return dout;  // nothing to synchronise (as MindSpore)
    const double factor = mean ? 1.0 / static_cast<double>(n) : 1.0;
    if (dout.size() == 2) return sparse_sum(x, dout, group, factor);
    const Tensor& dy = one(dout, "mirror", "dout");
    require_floating(dy, "mirror");
    Tensor g = collie::all_reduce(dy, ReduceOp::SUM, group).first;
    return {mean ? scale(g, factor) : g};
  };
}

Bprop::Fn make_virtual_div(const AttrReader& a) {
  const double divisor = a.get_double("divisor");
  if (divisor == 0) throw ValueError("get_bprop(\"virtual_div\"): divisor must not be 0");
  return [divisor](const TensorList&, const TensorList&, const TensorList& dout) -> TensorList {
    TensorList dx;
    for (const Tensor& dy : dout) {
      // Integer and bool cotangents pass unchanged, as MindSpore skips them.
      dx.push_back(is_floating(dy.dtype()) ? scale(dy, 1.0 / divisor) : dy);
    }
    return dx;
  };
}

// Gradient accumulation: k micro-batches add their cotangents locally; the k-th call
// reduces the sum once (all_reduce for a replicated parameter). Earlier calls return
// zeros, so the sum of what the k calls return is the synchronised gradient, and the
// communication happens once per k micro-batches.
Bprop::Fn make_mirror_mini_step(const AttrReader& a) {
  const std::string group = a.group();
  const bool mean = a.get_bool("mean_flag", false);
  const int64_t k = a.get_int("accumulation_steps", 1);
  if (k < 1)
    throw ValueError("get_bprop(\"mirror_mini_step\"): accumulation_steps must be at least 1");
  auto state = std::make_shared<Accumulation>();
  return [group, mean, k, state](const TensorList&, const TensorList&,
                                 const TensorList& dout) -> TensorList {
    if (dout.size() != 1) {
      throw ValueError(
          "bprop of mirror_mini_step: expects one dense cotangent (row-sparse "
          "accumulation is not supported; MindSpore silently returns zeros)");
    }
    const Tensor& dy = dout[0];
    require_floating(dy, "mirror_mini_step");
    state->sum = state->sum ? add(*state->sum, dy) : dy.contiguous().clone();
    if (++state->calls < k) return {zeros_like(dy)};
    Tensor g = collie::all_reduce(*state->sum, ReduceOp::SUM, group).first;
    *state = Accumulation{};
    return {mean ? scale(g, 1.0 / get_group_size(group)) : g};
  };
}

// The sharded form (forward all_gather of a parameter shard): the accumulated full-size
// cotangent is reduce-scattered once, half the traffic of MindSpore's all_reduce + slice.
Bprop::Fn make_mini_step_all_gather(const AttrReader& a) {
  const std::string group = a.group();
  const bool mean = a.get_bool("mean_flag", false);
  const int64_t k = a.get_int("accumulation_steps", 1);
  if (k < 1)
    throw ValueError("get_bprop(\"mini_step_all_gather\"): accumulation_steps must be at least 1");
  auto state = std::make_shared<Accumulation>();
  return [group, mean, k, state](const TensorList& x, const TensorList&,
                                 const TensorList& dout) -> TensorList {
    const Tensor& shard = one(x, "mini_step_all_gather", "x");
    const Tensor& dy = one(dout, "mini_step_all_gather", "dout");
    require_floating(dy, "mini_step_all_gather");
    state->sum = state->sum ? add(*state->sum, dy) : dy.contiguous().clone();
    if (++state->calls < k) return {zeros_like(shard)};
    Tensor g = collie::reduce_scatter_tensor(*state->sum, ReduceOp::SUM, group)
                   .first.reshape(shard.shape());
    *state = Accumulation{};
    return {mean ? scale(g, 1.0 / get_group_size(group)) : g};
  };
}

Bprop::Fn make_barrier(const AttrReader& a) {
  (void)a.group();
  return [](const TensorList&, const TensorList&, const TensorList&) -> TensorList { return {}; };
}

}  // namespace collie::autograd::detail
