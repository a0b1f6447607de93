// Element-wise copies and conversions: copy_from, to, cat, and reading elements
// as doubles (item, to_double_vector).
#include <algorithm>
#include <cstring>
#include <string>

#include "collie/errors.h"
#include "collie/tensor.h"
#include "core/element.h"
#include "core/strided.h"

namespace collie {

namespace {

template <typename To, typename From>
void copy_elements(const Tensor& dst, const Tensor& src) {
  void* out = dst.data_ptr();
  const void* in = src.data_ptr();
  const int64_t n = dst.numel();
  if (dst.is_contiguous() && src.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) {
      detail::store_element<To>(out, i,
                                detail::convert_element<To>(detail::load_element<From>(in, i)));
    }
    return;
  }
  detail::StridedWalker to(dst.shape(), dst.strides());
  detail::StridedWalker from(src.shape(), src.strides());
  for (int64_t i = 0; i < n; ++i, to.next(), from.next()) {
    detail::store_element<To>(
        out, to.offset(),
        detail::convert_element<To>(detail::load_element<From>(in, from.offset())));
  }
}

}  // namespace

void Tensor::copy_from(const Tensor& src) {
  if (src.numel() != numel()) {
    throw ValueError("copy_from: source of shape " + shape_to_string(src.shape()) + " has " +
                     std::to_string(src.numel()) + " elements but the destination of shape " +
                     shape_to_string(shape()) + " has " + std::to_string(numel()));
  }
  if (numel() == 0) return;
  // Overlapping views of one storage would read elements already overwritten.
  if (src.storage_ == storage_) {
    copy_from(src.clone());
    return;
  }
  if (src.dtype_ == dtype_ && src.is_contiguous() && is_contiguous()) {
    std::memcpy(data_ptr(), src.data_ptr(), nbytes());
    return;
  }
  dispatch_dtype(dtype_, [&](auto to_tag) {
    dispatch_dtype(src.dtype_, [&](auto from_tag) {
      copy_elements<decltype(to_tag), decltype(from_tag)>(*this, src);
    });
  });
}

Tensor Tensor::to(DType dtype) const {
  Tensor out = empty(shape(), dtype);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::cat(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) throw ValueError("cat: expected at least one tensor, got none");
  const Tensor& first = tensors.front();
  int64_t rows = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dim() == 0) throw ValueError("cat: tensor " + std::to_string(i) + " is 0-d");
    if (t.dtype() != first.dtype()) {
      throw ValueError("cat: tensor " + std::to_string(i) + " has dtype " +
                       std::string(dtype_name(t.dtype())) + " but tensor 0 has " +
                       std::string(dtype_name(first.dtype())));
    }
    if (!std::equal(t.shape().begin() + 1, t.shape().end(), first.shape().begin() + 1,
                    first.shape().end())) {
      throw ValueError("cat: tensor " + std::to_string(i) + " has shape " +
                       shape_to_string(t.shape()) + ", which differs from tensor 0's " +
                       shape_to_string(first.shape()) + " beyond dim 0");
    }
    rows += t.shape()[0];
  }
  Shape shape = first.shape();
  shape[0] = rows;
  Tensor out = empty(shape, first.dtype());
  int64_t row = 0;
  for (const Tensor& t : tensors) {
    out.slice(row, row + t.shape()[0]).copy_from(t);
    row += t.shape()[0];
  }
  return out;
}

double Tensor::item(int64_t flat_index) const {
  if (flat_index < 0 || flat_index >= numel()) {
    throw ValueError("item: index " + std::to_string(flat_index) +
                     " is out of range for a tensor of shape " + shape_to_string(shape()) + " (" +
                     std::to_string(numel()) + " elements)");
  }
  // Unravel the row-major index, last dim fastest.
  int64_t offset = 0;
  int64_t rest = flat_index;
  const Shape& shape = this->shape();
  const Shape& strides = this->strides();
  for (size_t d = shape.size(); d-- > 0;) {
    offset += rest % shape[d] * strides[d];
    rest /= shape[d];
  }
  return dispatch_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    return detail::convert_element<double>(detail::load_element<T>(data_ptr(), offset));
  });
}

std::vector<double> Tensor::to_double_vector() const {
  const Tensor doubles = to(DType::Float64);
  const double* values = doubles.data<double>();
  return std::vector<double>(values, values + doubles.numel());
}

}  // namespace collie
