// Local tensor arithmetic (see tensor_math.h). Kernels are templates over float and
// double; float16/bfloat16 take a detour through float32. Sums accumulate in double so
// that a sharded sum and a whole-batch sum of float32 data stay close.
#include "autograd/tensor_math.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "collie/errors.h"

namespace collie::autograd::detail {
namespace {

bool is_half(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }

std::string dtype_str(DType dt) { return std::string(dtype_name(dt)); }

// Contiguous strides of `shape` placed under the trailing dims of `out`, with 0 where the
// operand is broadcast (a missing leading dim or a size-1 dim).
Shape broadcast_strides(const Shape& shape, const Shape& out) {
  Shape strides(out.size(), 0);
  int64_t stride = 1;
  const size_t offset = out.size() - shape.size();
  for (size_t i = shape.size(); i-- > 0;) {
    strides[offset + i] = (shape[i] == 1 && out[offset + i] != 1) ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

// Calls visit(out_index, offset_in_operand) for every element of `out` in row-major order,
// where the operand has `strides` relative to out's dims.
template <typename Visit>
void for_each_broadcast(const Shape& out, const Shape& strides, Visit visit) {
  const int64_t n = shape_numel(out);
  std::vector<int64_t> idx(out.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    visit(i, off);
    for (size_t d = out.size(); d-- > 0;) {
      ++idx[d];
      off += strides[d];
      if (idx[d] < out[d]) break;
      off -= strides[d] * out[d];
      idx[d] = 0;
    }
  }
}

enum class Bin { Add, Sub, Mul };

template <typename T>
T apply(Bin op, T a, T b) {
  switch (op) {
    case Bin::Add:
      return a + b;
    case Bin::Sub:
      return a - b;
    case Bin::Mul:
      return a * b;
  }
  return a;
}

template <typename T>
Tensor binary_kernel(const Tensor& a, const Tensor& b, const Shape& out, Bin op) {
  Tensor ac = a.contiguous(), bc = b.contiguous();
  Tensor y = Tensor::empty(out, a.dtype());
  const T* pa = ac.data<T>();
  const T* pb = bc.data<T>();
  T* py = y.data<T>();
  if (a.shape() == out && b.shape() == out) {
    const int64_t n = y.numel();
    for (int64_t i = 0; i < n; ++i) py[i] = apply(op, pa[i], pb[i]);
    return y;
  }
  // Walk the output once per operand: first copy a's broadcast values, then combine b's.
  for_each_broadcast(out, broadcast_strides(a.shape(), out),
                     [&](int64_t i, int64_t off) { py[i] = pa[off]; });
  for_each_broadcast(out, broadcast_strides(b.shape(), out),
                     [&](int64_t i, int64_t off) { py[i] = apply(op, py[i], pb[off]); });
  return y;
}

Tensor binary(const Tensor& a, const Tensor& b, Bin op, std::string_view what) {
  require_floating(a, what);
  require_floating(b, what);
  if (a.dtype() != b.dtype()) {
    throw TypeError(std::string(what) + ": operands have different dtypes " + dtype_str(a.dtype()) +
                    " and " + dtype_str(b.dtype()));
  }
  if (is_half(a.dtype())) {
    return binary(a.to(DType::Float32), b.to(DType::Float32), op, what).to(a.dtype());
  }
  Shape out = broadcast_shapes(a.shape(), b.shape(), what);
  if (a.dtype() == DType::Float64) return binary_kernel<double>(a, b, out, op);
  return binary_kernel<float>(a, b, out, op);
}

// Calls fn<T>() for float32/float64; callers have widened halves already.
template <typename Fn>
decltype(auto) float_dispatch(DType dt, Fn&& fn) {
  if (dt == DType::Float64) return fn(double{});
  return fn(float{});
}

template <typename T>
T unary_value(Unary op, T x) {
  switch (op) {
    case Unary::Sin:
      return std::sin(x);
    case Unary::Cos:
      return std::cos(x);
    case Unary::Exp:
      return std::exp(x);
    case Unary::Square:
      return x * x;
    case Unary::Relu:
      return x > T(0) ? x : T(0);
    case Unary::ReluMask:
      return x > T(0) ? T(1) : T(0);
  }
  return x;
}

void require_same_shape(const Tensor& a, const Tensor& b, std::string_view what) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    throw ValueError(std::string(what) + ": expected equal shapes and dtypes, got " +
                     shape_to_string(a.shape()) + " " + dtype_str(a.dtype()) + " and " +
                     shape_to_string(b.shape()) + " " + dtype_str(b.dtype()));
  }
}

}  // namespace

void require_floating(const Tensor& t, std::string_view what) {
  if (!is_floating(t.dtype())) {
    throw TypeError(std::string(what) + " is not differentiable for dtype " + dtype_str(t.dtype()) +
                    " (gradients need a floating dtype)");
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view what) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ValueError(std::string(what) + ": shapes " + shape_to_string(a) + " and " +
                       shape_to_string(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(a, b, Bin::Add, "add"); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(a, b, Bin::Sub, "sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(a, b, Bin::Mul, "mul"); }

Tensor scale(const Tensor& a, double factor) {
  require_floating(a, "scale");
  if (is_half(a.dtype())) return scale(a.to(DType::Float32), factor).to(a.dtype());
  return float_dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor ac = a.contiguous();
    Tensor y = Tensor::empty(a.shape(), a.dtype());
    const T* pa = ac.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) py[i] = static_cast<T>(pa[i] * factor);
    return y;
  });
}

Tensor unary(const Tensor& a, Unary op) {
  require_floating(a, "unary op");
  if (is_half(a.dtype())) return unary(a.to(DType::Float32), op).to(a.dtype());
  return float_dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor ac = a.contiguous();
    Tensor y = Tensor::empty(a.shape(), a.dtype());
    const T* pa = ac.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) py[i] = unary_value(op, pa[i]);
    return y;
  });
}

Tensor equal_mask(const Tensor& a, const Tensor& b) {
  require_same_shape(a, b, "equal_mask");
  require_floating(a, "max/min");
  if (is_half(a.dtype()))
    return equal_mask(a.to(DType::Float32), b.to(DType::Float32)).to(a.dtype());
  return float_dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor ac = a.contiguous(), bc = b.contiguous();
    Tensor y = Tensor::empty(a.shape(), a.dtype());
    const T* pa = ac.data<T>();
    const T* pb = bc.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      const bool hit = pa[i] == pb[i] || (std::isnan(pa[i]) && std::isnan(pb[i]));
      py[i] = hit ? T(1) : T(0);
    }
    return y;
  });
}

Tensor split_evenly(const Tensor& s, const Tensor& mask, const Tensor& count) {
  require_same_shape(s, mask, "split_evenly");
  require_same_shape(s, count, "split_evenly");
  if (is_half(s.dtype())) {
    return split_evenly(s.to(DType::Float32), mask.to(DType::Float32), count.to(DType::Float32))
        .to(s.dtype());
  }
  return float_dispatch(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor sc = s.contiguous(), mc = mask.contiguous(), cc = count.contiguous();
    Tensor y = Tensor::empty(s.shape(), s.dtype());
    const T* ps = sc.data<T>();
    const T* pm = mc.data<T>();
    const T* pc = cc.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) py[i] = pm[i] != T(0) ? ps[i] / pc[i] : T(0);
    return y;
  });
}

Tensor product_of_others(const Tensor& stacked, int64_t row) {
  require_floating(stacked, "all_reduce(PROD)");
  if (is_half(stacked.dtype())) {
    return product_of_others(stacked.to(DType::Float32), row).to(stacked.dtype());
  }
  const int64_t n_rows = stacked.size(0), n = stacked.numel() / std::max<int64_t>(n_rows, 1);
  return float_dispatch(stacked.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor sc = stacked.contiguous();
    Tensor y = Tensor::empty({n}, stacked.dtype());
    const T* p = sc.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      double prefix = 1, suffix = 1;
      for (int64_t k = 0; k < row; ++k) prefix *= p[k * n + i];
      for (int64_t k = row + 1; k < n_rows; ++k) suffix *= p[k * n + i];
      py[i] = static_cast<T>(prefix * suffix);
    }
    return y;
  });
}

Tensor sum_rows(const Tensor& stacked) {
  require_floating(stacked, "sum_rows");
  if (is_half(stacked.dtype())) return sum_rows(stacked.to(DType::Float32)).to(stacked.dtype());
  const int64_t n_rows = stacked.size(0), n = stacked.numel() / std::max<int64_t>(n_rows, 1);
  return float_dispatch(stacked.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor sc = stacked.contiguous();
    Tensor y = Tensor::empty({n}, stacked.dtype());
    const T* p = sc.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      double acc = 0;
      for (int64_t k = 0; k < n_rows; ++k) acc += p[k * n + i];
      py[i] = static_cast<T>(acc);
    }
    return y;
  });
}

Tensor sum_all(const Tensor& a) {
  require_floating(a, "sum");
  double acc = 0;
  Tensor ac = a.contiguous();
  if (a.dtype() == DType::Float64) {
    const double* p = ac.data<double>();
    for (int64_t i = 0; i < a.numel(); ++i) acc += p[i];
  } else if (a.dtype() == DType::Float32) {
    const float* p = ac.data<float>();
    for (int64_t i = 0; i < a.numel(); ++i) acc += p[i];
  } else {
    for (int64_t i = 0; i < a.numel(); ++i) acc += ac.item(i);
  }
  return Tensor::scalar(acc, a.dtype());
}

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g.contiguous();
  require_floating(g, "sum_to_shape");
  Shape out = broadcast_shapes(shape, g.shape(), "sum_to_shape");
  if (out != g.shape()) {
    throw ValueError("sum_to_shape: " + shape_to_string(g.shape()) + " is not a broadcast of " +
                     shape_to_string(shape));
  }
  std::vector<double> acc(static_cast<size_t>(shape_numel(shape)), 0.0);
  std::vector<double> gv = g.to_double_vector();
  for_each_broadcast(g.shape(), broadcast_strides(shape, g.shape()), [&](int64_t i, int64_t off) {
    acc[static_cast<size_t>(off)] += gv[static_cast<size_t>(i)];
  });
  return Tensor::from_vector(acc, shape).to(g.dtype());
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  require_floating(a, "matmul");
  if (a.dim() != 2 || b.dim() != 2 || a.size(1) != b.size(0) || a.dtype() != b.dtype()) {
    throw ValueError("matmul needs [m, k] x [k, n] of one dtype, got " +
                     shape_to_string(a.shape()) + " " + dtype_str(a.dtype()) + " and " +
                     shape_to_string(b.shape()) + " " + dtype_str(b.dtype()));
  }
  if (is_half(a.dtype())) return matmul(a.to(DType::Float32), b.to(DType::Float32)).to(a.dtype());
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  return float_dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor ac = a.contiguous();
    Tensor bt = b.transpose(0, 1).contiguous();  // rows of bt are columns of b: unit stride
    Tensor y = Tensor::empty({m, n}, a.dtype());
    const T* pa = ac.data<T>();
    const T* pb = bt.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) acc += static_cast<double>(pa[i * k + l]) * pb[j * k + l];
        py[i * n + j] = static_cast<T>(acc);
      }
    }
    return y;
  });
}

Tensor zeros_like(const Tensor& t) { return Tensor::zeros(t.shape(), t.dtype()); }

Tensor flatten(const Tensor& t) { return t.reshape({t.numel()}); }

int64_t normalize_dim(int64_t dim, int64_t rank, std::string_view what) {
  const int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank) {
    throw ValueError(std::string(what) + ": dim " + std::to_string(dim) +
                     " is out of range for a " + std::to_string(rank) + "-d tensor");
  }
  return d;
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  if (dim == 0) return t.slice(start, start + len);
  return t.transpose(0, dim).slice(start, start + len).transpose(0, dim);
}

Tensor cat_dim(const std::vector<Tensor>& parts, int64_t dim) {
  if (dim == 0) return Tensor::cat(parts);
  std::vector<Tensor> moved;
  moved.reserve(parts.size());
  for (const Tensor& p : parts) moved.push_back(p.transpose(0, dim).contiguous());
  return Tensor::cat(moved).transpose(0, dim).contiguous();
}

void add_into(const Tensor& view, const Tensor& src) {
  Tensor target = view;  // shares storage: copy_from writes through the view's strides
  target.copy_from(add(view.contiguous(), src));
}

}  // namespace collie::autograd::detail
