// Rules of the gathering ops: all_gather <-> reduce_scatter (even and uneven sizes).
#include <string>

#include "autograd/rule_util.h"
#include "autograd/rules.h"
#include "autograd/tensor_math.h"
#include "collie/errors.h"

namespace collie::autograd::detail {

// all_gather's adjoint is reduce_scatter SUM: rank r's block of every rank's cotangent,
// summed. mean_flag additionally divides by N: it folds data-parallel averaging into the
// op (MindSpore's optimizer-sharding use), so it is not part of the adjoint itself.
Bprop::Fn make_all_gather(const AttrReader& a) {
  const std::string group = a.group();
  const bool mean = a.get_bool("mean_flag", false);
  return
      [group, mean](const TensorList& x, const TensorList&, const TensorList& dout) -> TensorList {
        const Tensor& dy = one(dout, "all_gather_into_tensor", "dout");
        require_floating(dy, "all_gather_into_tensor");
        Tensor dx = collie::reduce_scatter_tensor(dy, ReduceOp::SUM, group).first;
        if (!x.empty()) dx = dx.reshape(x[0].shape());  // a 0-d input was gathered as [N]
        return {mean ? scale(dx, 1.0 / get_group_size(group)) : dx};
      };
}

// reduce_scatter SUM's adjoint is all_gather. For PROD/MIN/MAX an all_gather of the
// cotangent would be silently wrong, so the rule refuses them here (as MindSpore does).
Bprop::Fn make_reduce_scatter(const AttrReader& a) {
  const std::string group = a.group();
  const ReduceOp op = a.reduce_op();
  if (op != ReduceOp::SUM) {
    throw RuntimeError("get_bprop(\"" + a.op() +
                       "\"): the gradient of reduce_scatter is defined for op=sum "
                       "only, got op=" +
                       std::string(reduce_op_name(op)) +
                       " (all_gather of the cotangent would be wrong for it); use all_reduce with "
                       "that op, whose rule handles it, and slice");
  }
  return [group](const TensorList&, const TensorList&, const TensorList& dout) -> TensorList {
    const Tensor& dy = one(dout, "reduce_scatter_tensor", "dout");
    require_floating(dy, "reduce_scatter_tensor");
    return {collie::all_gather_into_tensor(dy, group).first};
  };
}

// all_gather_v's adjoint is reduce_scatter_v with the forward's row counts; they are
// re-gathered from x's rows unless given as rows_per_rank.
Bprop::Fn make_all_gather_v(const AttrReader& a) {
  const std::string group = a.group();
  const std::vector<int64_t> given = a.get_ints("rows_per_rank", std::vector<int64_t>{});
  return
      [group, given](const TensorList& x, const TensorList&, const TensorList& dout) -> TensorList {
        const Tensor& dy = one(dout, "all_gather_v", "dout");
        std::vector<int64_t> rows = given;
        if (rows.empty()) {
          const Tensor& x0 = one(x, "all_gather_v", "x");
          Tensor mine = Tensor::from_vector(std::vector<int64_t>{x0.size(0)});
          Tensor all = collie::all_gather_into_tensor(mine, group).first;
          for (int64_t i = 0; i < all.numel(); ++i) rows.push_back(all.data<int64_t>()[i]);
        }
        return {collie::reduce_scatter_v(dy, rows, group)};
      };
}

Bprop::Fn make_reduce_scatter_v(const AttrReader& a) {
  const std::string group = a.group();
  (void)a.get_ints("rows_per_rank", std::vector<int64_t>{});  // the forward's; not needed backward
  return [group](const TensorList&, const TensorList&, const TensorList& dout) -> TensorList {
    const Tensor& dy = one(dout, "reduce_scatter_v", "dout");
    require_floating(dy, "reduce_scatter_v");
    return {collie::all_gather_v(dy, group)};
  };
}

}  // namespace collie::autograd::detail
