// Tensor comparison: exact equality and numpy-style allclose.
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "collie/tensor.h"
#include "core/element.h"
#include "core/strided.h"

namespace collie {

namespace {

// Floats compare by value except that NaN equals NaN (so a tensor equals its
// copy); everything else compares exactly.
template <typename T>
bool same_value(T a, T b) {
  if constexpr (std::is_floating_point_v<decltype(detail::widen(a))>) {
    const auto x = detail::widen(a);
    const auto y = detail::widen(b);
    return x == y || (std::isnan(x) && std::isnan(y));
  } else {
    return a == b;
  }
}

template <typename T>
bool all_equal(const Tensor& a, const Tensor& b) {
  detail::StridedWalker wa(a.shape(), a.strides());
  detail::StridedWalker wb(b.shape(), b.strides());
  for (int64_t i = 0; i < a.numel(); ++i, wa.next(), wb.next()) {
    if (!same_value(detail::load_element<T>(a.data_ptr(), wa.offset()),
                    detail::load_element<T>(b.data_ptr(), wb.offset()))) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool Tensor::equal(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape() != other.shape()) return false;
  return dispatch_dtype(dtype_, [&](auto tag) { return all_equal<decltype(tag)>(*this, other); });
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol) const {
  if (shape() != other.shape()) return false;
  const std::vector<double> a = to_double_vector();
  const std::vector<double> b = other.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    // As numpy.isclose: infinities are close only to the same infinity (their
    // difference is NaN or infinite), NaN is close to nothing.
    if (a[i] == b[i]) continue;
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return false;
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]))) return false;
  }
  return true;
}

}  // namespace collie
