// Rules of the rooted ops: broadcast <-> reduce, gather <-> scatter.
//
// comm_func's rooted ops give non-root ranks a shape-[1] placeholder "with no
// mathematical meaning". collie treats it as a constant: its cotangent is ignored, and
// every rank (root or not) gets a cotangent of its input's shape. Non-root ranks pass
// zero buffers of the root's shape where the backward collective needs one.
#include <string>

#include "autograd/rule_util.h"
#include "autograd/rules.h"
#include "autograd/tensor_math.h"

namespace collie::autograd::detail {
namespace {

bool is_root(int world_rank) { return get_rank() == world_rank; }

}  // namespace

// broadcast's adjoint: reduce-SUM of the cotangents to the root; zeros elsewhere (the
// non-root inputs are never read). MindSpore returns dout unchanged, which is wrong.
Bprop::Fn make_broadcast(const AttrReader& a) {
  const std::string group = a.group();
  const int src = a.get_rank_like("src", 0);
  return [group, src](const TensorList&, const TensorList&, const TensorList& dout) -> TensorList {
    const Tensor& dy = one(dout, "broadcast", "dout");
    require_floating(dy, "broadcast");
    Tensor total = collie::reduce(dy, src, ReduceOp::SUM, group);
    return {is_root(src) ? total : zeros_like(dy)};
  };
}

// reduce's adjoint for SUM: broadcast of the root's cotangent to every rank. For MAX/MIN
// the root's result and cotangent are broadcast together and split evenly among the
// ranks that hold the extremum; for PROD the broadcast cotangent is multiplied by the
// product of the other ranks' x (all_gather, no division).
Bprop::Fn make_reduce(const AttrReader& a) {
  const std::string group = a.group();
  const int dst = a.get_rank_like("dst");
  const ReduceOp op = a.reduce_op();
  return [group, dst, op](const TensorList& x, const TensorList& out,
                          const TensorList& dout) -> TensorList {
    const Tensor& x0 = one(x, "reduce", "x");
    require_floating(x0, "reduce");
    const bool root = is_root(dst);
    const int64_t n = x0.numel();
    auto root_dy = [&]() {
      const Tensor& dy = one(dout, "reduce", "dout");
      expect_shape(dy, x0.shape(), "reduce", "dout on the root");
      expect_dtype(dy, x0, "reduce");
      return dy;
    };
    if (op == ReduceOp::MAX || op == ReduceOp::MIN) {
      Tensor payload = Tensor::zeros({2 * n}, x0.dtype());
      if (root) {
        const Tensor& y = one(out, "reduce", "out");
        expect_shape(y, x0.shape(), "reduce", "out on the root");
        payload = cat_dim({flatten(y), flatten(root_dy())}, 0);
      }
      Tensor both = collie::broadcast(payload, dst, group);
      Tensor mask = equal_mask(x0, narrow(both, 0, 0, n).contiguous().reshape(x0.shape()));
      Tensor count = collie::all_reduce(mask, ReduceOp::SUM, group).first;
      Tensor s = narrow(both, 0, n, n).contiguous().reshape(x0.shape());
      return {split_evenly(s, mask, count)};
    }
    Tensor s = collie::broadcast(root ? root_dy() : zeros_like(x0), dst, group);
    if (op == ReduceOp::SUM) return {s};
    Tensor gathered = collie::all_gather_into_tensor(flatten(x0).reshape({1, n}), group).first;
    return {mul(s, product_of_others(gathered, get_rank(group)).reshape(x0.shape()))};
  };
}

// gather's adjoint: scatter of the root's cotangent (block r to group rank r).
Bprop::Fn make_gather(const AttrReader& a) {
  const std::string group = a.group();
  const int dst = a.get_rank_like("dst", 0);
  return
      [group, dst](const TensorList& x, const TensorList&, const TensorList& dout) -> TensorList {
        const Tensor& x0 = one(x, "gather_into_tensor", "x");
        require_floating(x0, "gather_into_tensor");
        Shape full = x0.shape().empty() ? Shape{1} : x0.shape();
        full[0] *= get_group_size(group);
        Tensor seed = Tensor::zeros(full, x0.dtype());
        if (is_root(dst)) {
          seed = one(dout, "gather_into_tensor", "dout");
          expect_shape(seed, full, "gather_into_tensor", "dout on the root");
        }
        return {collie::scatter_tensor(seed, dst, group).reshape(x0.shape())};
      };
}

// scatter's adjoint: gather of the cotangents to the root; zeros on other ranks.
Bprop::Fn make_scatter(const AttrReader& a) {
  const std::string group = a.group();
  const int src = a.get_rank_like("src", 0);
  return
      [group, src](const TensorList& x, const TensorList&, const TensorList& dout) -> TensorList {
        const Tensor& x0 = one(x, "scatter_tensor", "x");
        const Tensor& dy = one(dout, "scatter_tensor", "dout");
        require_floating(dy, "scatter_tensor");
        Tensor total = collie::gather_into_tensor(dy, src, group);
        return {is_root(src) ? total.reshape(x0.shape()) : zeros_like(x0)};
      };
}

}  // namespace collie::autograd::detail
