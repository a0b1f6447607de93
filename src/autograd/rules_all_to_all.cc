// Rules of the all-to-all family: every edge reversed. A block that went from rank i to
// rank j comes back from j to i, so split and concat dims swap, send and receive counts
// swap, and a count matrix is transposed.
#include <optional>
#include <string>

#include "autograd/rule_util.h"
#include "autograd/rules.h"
#include "autograd/tensor_math.h"
#include "collie/errors.h"

namespace collie::autograd::detail {

Bprop::Fn make_all_to_all(const AttrReader& a) {
  const std::string group = a.group();
  const int64_t split_dim = a.get_int("split_dim");
  const int64_t concat_dim = a.get_int("concat_dim");
  const std::optional<int64_t> split_count =
      a.has("split_count") ? std::optional<int64_t>(a.get_int("split_count")) : std::nullopt;
  return [group, split_dim, concat_dim, split_count](const TensorList&, const TensorList&,
                                                     const TensorList& dout) -> TensorList {
    if (split_count && *split_count != get_group_size(group)) {
      throw ValueError("bprop of all_to_all: split_count " + std::to_string(*split_count) +
                       " must equal the group size " + std::to_string(get_group_size(group)));
    }
    const Tensor& dy = one(dout, "all_to_all", "dout");
    require_floating(dy, "all_to_all");
    return {collie::all_to_all(dy, concat_dim, split_dim, group)};
  };
}

Bprop::Fn make_all_to_all_v(const AttrReader& a) {
  const std::string group = a.group();
  const auto send = a.get_ints("send_numel_list");
  const auto recv = a.get_ints("recv_numel_list");
  return [group, send, recv](const TensorList& x, const TensorList&,
                             const TensorList& dout) -> TensorList {
    const Tensor& dy = one(dout, "all_to_all_v", "dout");
    require_floating(dy, "all_to_all_v");
    Tensor dx = collie::all_to_all_v(dy, recv, send, group);
    return {x.empty() ? dx : dx.reshape(x[0].shape())};
  };
}

// Backward: output_shape = the input's shape, and the split lists trade places (an empty
// list still means equal parts, now of the other tensor — the same sizes as forward).
Bprop::Fn make_all_to_all_single(const AttrReader& a) {
  const std::string group = a.group();
  (void)a.get_ints("output_shape", std::vector<int64_t>{});  // the forward's; x gives it back
  const auto out_splits = a.get_ints("output_split_sizes", std::vector<int64_t>{});
  const auto in_splits = a.get_ints("input_split_sizes", std::vector<int64_t>{});
  return [group, out_splits, in_splits](const TensorList& x, const TensorList&,
                                        const TensorList& dout) -> TensorList {
    const Tensor& x0 = one(x, "all_to_all_single_with_output_shape", "x");
    const Tensor& dy = one(dout, "all_to_all_single_with_output_shape", "dout");
    require_floating(dy, "all_to_all_single_with_output_shape");
    return {
        collie::all_to_all_single_with_output_shape(x0.shape(), dy, in_splits, out_splits, group)
            .first};
  };
}

Bprop::Fn make_all_to_all_list(const AttrReader& a) {
  const std::string group = a.group();
  (void)a.get_shapes("output_shape_list", std::vector<Shape>{});  // the forward's
  return [group](const TensorList& x, const TensorList&, const TensorList& dout) -> TensorList {
    expect_size(dout, x.size(), "all_to_all_with_output_shape", "dout (one per input)");
    std::vector<Shape> shapes;
    for (const Tensor& t : x) shapes.push_back(t.shape());
    for (const Tensor& t : dout) require_floating(t, "all_to_all_with_output_shape");
    return collie::all_to_all_with_output_shape(shapes, dout, group).first;
  };
}

// x = [input] or [input, output as it was before the call]; out = [output]. The input's
// cotangent comes back through the transposed matrix (rows never sent get 0). Rows of
// the prior output that the call overwrote get no gradient; the others pass through.
Bprop::Fn make_all_to_all_v_c(const AttrReader& a) {
  const std::string group = a.group();
  const auto matrix = a.get_ints("send_count_matrix");
  return [group, matrix](const TensorList& x, const TensorList&,
                         const TensorList& dout) -> TensorList {
    if (x.empty() || x.size() > 2) {
      throw ValueError("bprop of all_to_all_v_c: x is [input] or [input, prior output], got " +
                       std::to_string(x.size()) + " tensors");
    }
    const Tensor& dy = one(dout, "all_to_all_v_c", "dout");
    require_floating(dy, "all_to_all_v_c");
    const size_t n = static_cast<size_t>(get_group_size(group));
    if (matrix.size() != n * n) {
      throw ValueError("bprop of all_to_all_v_c: send_count_matrix has " +
                       std::to_string(matrix.size()) + " entries for a group of " +
                       std::to_string(n));
    }
    std::vector<int64_t> transposed(n * n);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) transposed[j * n + i] = matrix[i * n + j];
    }
    Tensor dinput = zeros_like(x[0]);
    collie::all_to_all_v_c(dinput, dy, transposed, group);
    TensorList dx{dinput};
    if (x.size() == 2) {
      const size_t me = static_cast<size_t>(get_rank(group));
      int64_t written = 0;
      for (size_t j = 0; j < n; ++j) written += matrix[j * n + me];
      Tensor dprior = dy.clone();
      Shape overwritten = dy.shape();
      overwritten[0] = written;
      narrow(dprior, 0, 0, written).copy_from(Tensor::zeros(overwritten, dy.dtype()));
      dx.push_back(dprior);
    }
    return dx;
  };
}

}  // namespace collie::autograd::detail
