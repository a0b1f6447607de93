// The tape's local ops (collie/autograd.h): enough to write a loss.
#include <string>

#include "autograd/tape_internal.h"
#include "autograd/tensor_math.h"
#include "collie/errors.h"

namespace collie::autograd {

using detail::record1;
using detail::Unary;

Variable add(const Variable& a, const Variable& b) {
  Tensor av = a.value(), bv = b.value();
  return record1(
      "add", false, {a, b}, detail::add(av, bv), [av, bv](const TensorList& g) -> TensorList {
        return {detail::sum_to_shape(g[0], av.shape()), detail::sum_to_shape(g[0], bv.shape())};
      });
}

Variable sub(const Variable& a, const Variable& b) {
  Tensor av = a.value(), bv = b.value();
  return record1("sub", false, {a, b}, detail::sub(av, bv),
                 [av, bv](const TensorList& g) -> TensorList {
                   return {detail::sum_to_shape(g[0], av.shape()),
                           detail::sum_to_shape(detail::scale(g[0], -1.0), bv.shape())};
                 });
}

Variable mul(const Variable& a, const Variable& b) {
  Tensor av = a.value(), bv = b.value();
  return record1("mul", false, {a, b}, detail::mul(av, bv),
                 [av, bv](const TensorList& g) -> TensorList {
                   return {detail::sum_to_shape(detail::mul(g[0], bv), av.shape()),
                           detail::sum_to_shape(detail::mul(g[0], av), bv.shape())};
                 });
}

Variable scale(const Variable& a, double factor) {
  return record1(
      "scale", false, {a}, detail::scale(a.value(), factor),
      [factor](const TensorList& g) -> TensorList { return {detail::scale(g[0], factor)}; });
}

Variable matmul(const Variable& a, const Variable& b) {
  Tensor av = a.value(), bv = b.value();
  return record1(
      "matmul", false, {a, b}, detail::matmul(av, bv), [av, bv](const TensorList& g) -> TensorList {
        return {detail::matmul(g[0], bv.transpose(0, 1)), detail::matmul(av.transpose(0, 1), g[0])};
      });
}

Variable sum(const Variable& a) {
  Tensor av = a.value();
  return record1("sum", false, {a}, detail::sum_all(av), [av](const TensorList& g) -> TensorList {
    return {Tensor::full(av.shape(), g[0].item(), av.dtype())};
  });
}

Variable mean(const Variable& a) {
  Tensor av = a.value();
  if (av.numel() == 0) throw ValueError("mean of an empty tensor");
  const double inv = 1.0 / static_cast<double>(av.numel());
  return record1("mean", false, {a}, detail::scale(detail::sum_all(av), inv),
                 [av, inv](const TensorList& g) -> TensorList {
                   return {Tensor::full(av.shape(), g[0].item() * inv, av.dtype())};
                 });
}

Variable square(const Variable& a) {
  Tensor av = a.value();
  return record1("square", false, {a}, detail::unary(av, Unary::Square),
                 [av](const TensorList& g) -> TensorList {
                   return {detail::mul(g[0], detail::scale(av, 2.0))};
                 });
}

Variable sin(const Variable& a) {
  Tensor av = a.value();
  return record1("sin", false, {a}, detail::unary(av, Unary::Sin),
                 [av](const TensorList& g) -> TensorList {
                   return {detail::mul(g[0], detail::unary(av, Unary::Cos))};
                 });
}

Variable exp(const Variable& a) {
  Tensor y = detail::unary(a.value(), Unary::Exp);
  return record1("exp", false, {a}, y,
                 [y](const TensorList& g) -> TensorList { return {detail::mul(g[0], y)}; });
}

Variable relu(const Variable& a) {
  Tensor av = a.value();
  return record1("relu", false, {a}, detail::unary(av, Unary::Relu),
                 [av](const TensorList& g) -> TensorList {
                   return {detail::mul(g[0], detail::unary(av, Unary::ReluMask))};
                 });
}

Variable reshape(const Variable& a, const Shape& shape) {
  Shape from = a.shape();
  return record1("reshape", false, {a}, a.value().reshape(shape),
                 [from](const TensorList& g) -> TensorList { return {g[0].reshape(from)}; });
}

Variable slice(const Variable& a, int64_t dim, int64_t start, int64_t end) {
  Tensor av = a.value();
  const int64_t d = detail::normalize_dim(dim, av.dim(), "slice");
  if (start < 0 || end < start || end > av.size(d)) {
    throw ValueError("slice: [" + std::to_string(start) + ", " + std::to_string(end) +
                     ") is out of range for dim " + std::to_string(d) + " of size " +
                     std::to_string(av.size(d)));
  }
  Tensor y = detail::narrow(av, d, start, end - start).contiguous();
  return record1("slice", false, {a}, y, [av, d, start, end](const TensorList& g) -> TensorList {
    Tensor dx = detail::zeros_like(av);
    detail::narrow(dx, d, start, end - start).copy_from(g[0]);
    return {dx};
  });
}

Variable cat(const std::vector<Variable>& parts, int64_t dim) {
  if (parts.empty()) throw ValueError("cat of an empty list");
  TensorList values;
  for (const Variable& p : parts) values.push_back(p.value());
  const int64_t d = detail::normalize_dim(dim, values[0].dim(), "cat");
  std::vector<int64_t> sizes;
  for (const Tensor& v : values) sizes.push_back(v.size(d));
  return record1("cat", false, parts, detail::cat_dim(values, d),
                 [d, sizes](const TensorList& g) -> TensorList {
                   TensorList dx;
                   int64_t offset = 0;
                   for (int64_t s : sizes) {
                     dx.push_back(detail::narrow(g[0], d, offset, s).contiguous());
                     offset += s;
                   }
                   return dx;
                 });
}

Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }

}  // namespace collie::autograd
