// Tensor construction, metadata, and views (slice, transpose, split, reshape).
#include "collie/tensor.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "collie/errors.h"
#include "core/element.h"

namespace collie {

namespace {

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

void check_shape(const Shape& shape) {
  int64_t numel = 1;
  for (int64_t extent : shape) {
    if (extent < 0) {
      throw ValueError("invalid shape " + shape_to_string(shape) + ": sizes must be >= 0");
    }
    if (extent != 0 && numel > std::numeric_limits<int64_t>::max() / extent) {
      throw ValueError("shape " + shape_to_string(shape) + " has too many elements");
    }
    numel *= extent;
  }
}

// Resolves a dim that may count from the end (-1 = last).
int64_t normalize_dim(int64_t d, int64_t ndim, const char* what) {
  const int64_t resolved = d < 0 ? d + ndim : d;
  if (resolved < 0 || resolved >= ndim) {
    throw ValueError(std::string(what) + ": dim " + std::to_string(d) +
                     " is out of range for a tensor with " + std::to_string(ndim) + " dims");
  }
  return resolved;
}

// The shape `requested` with its one -1 (if any) replaced so it holds `numel` elements.
Shape infer_shape(const Shape& requested, int64_t numel, const Shape& from) {
  Shape shape = requested;
  int64_t known = 1;
  int64_t inferred = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (inferred >= 0) {
        throw ValueError("reshape: only one dim may be -1, got " + shape_to_string(requested));
      }
      inferred = static_cast<int64_t>(d);
    } else if (shape[d] < 0) {
      throw ValueError("reshape: invalid size " + std::to_string(shape[d]) + " in " +
                       shape_to_string(requested));
    } else {
      known *= shape[d];
    }
  }
  const std::string cannot = "reshape: cannot reshape a tensor of shape " + shape_to_string(from) +
                             " (" + std::to_string(numel) + " elements) into shape " +
                             shape_to_string(requested);
  if (inferred >= 0) {
    if (known == 0 || numel % known != 0) throw ValueError(cannot);
    shape[static_cast<size_t>(inferred)] = numel / known;
  } else if (known != numel) {
    throw ValueError(cannot);
  }
  return shape;
}

}  // namespace

int64_t shape_numel(const Shape& shape) {
  int64_t numel = 1;
  for (int64_t extent : shape) numel *= extent;
  return numel;
}

std::string shape_to_string(const Shape& shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(shape[d]);
  }
  return text + "]";
}

void check_numel_matches(int64_t numel, const Shape& shape) {
  check_shape(shape);
  if (numel != shape_numel(shape)) {
    throw ValueError("got " + std::to_string(numel) + " values for shape " +
                     shape_to_string(shape) + ", which holds " +
                     std::to_string(shape_numel(shape)));
  }
}

// Every default-constructed tensor shares one empty storage: they hold no
// bytes, and the factories below start from a default tensor.
Tensor::Tensor() : shape_{0}, strides_{1} {
  static const auto shared_empty = std::make_shared<Storage>(0);
  storage_ = shared_empty;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  check_shape(shape);
  Tensor t{Bare{}};
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.storage_ = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) *
                                         collie::element_size(dtype));
  return t;
}

Tensor Tensor::uninitialized(const Shape& shape, DType dtype) {
  check_shape(shape);
  Tensor t{Bare{}};
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.storage_ = std::make_shared<Storage>(
      static_cast<size_t>(shape_numel(shape)) * collie::element_size(dtype), /*zero=*/false);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) { return empty(shape, dtype); }

Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T element = detail::convert_element<T>(value);
    void* data = t.data_ptr();
    for (int64_t i = 0; i < t.numel(); ++i) detail::store_element<T>(data, i, element);
  });
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::arange(double start, double end, double step, DType dtype) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end)) {
    throw ValueError("arange: start, end and step must be finite and step nonzero, got start=" +
                     std::to_string(start) + " end=" + std::to_string(end) +
                     " step=" + std::to_string(step));
  }
  const double count = std::ceil((end - start) / step);
  if (count > 0x1p62) {
    throw ValueError("arange: " + std::to_string(count) + " elements are too many");
  }
  Tensor t = empty({count > 0 ? static_cast<int64_t>(count) : 0}, dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    void* data = t.data_ptr();
    // start + i*step (as numpy does) rather than repeated addition, which drifts.
    for (int64_t i = 0; i < t.numel(); ++i) {
      detail::store_element<T>(data, i,
                               detail::convert_element<T>(start + static_cast<double>(i) * step));
    }
  });
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype) {
  return arange(0.0, static_cast<double>(n), 1.0, dtype);
}

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dtype, const Shape& strides,
                         std::function<void(void*)> deleter) {
  check_shape(shape);
  if (!strides.empty() && strides.size() != shape.size()) {
    throw ValueError("from_blob: " + std::to_string(strides.size()) + " strides for the " +
                     std::to_string(shape.size()) + " dims of shape " + shape_to_string(shape));
  }
  Tensor t{Bare{}};
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = strides.empty() ? contiguous_strides(shape) : strides;
  // The extent the view can reach: one past the element with the largest offset.
  int64_t extent = shape_numel(shape) == 0 ? 0 : 1;
  for (size_t d = 0; d < shape.size() && extent > 0; ++d) {
    if (t.strides_[d] < 0) {
      throw ValueError("from_blob: negative strides are not supported, got " +
                       shape_to_string(t.strides_));
    }
    extent += (shape[d] - 1) * t.strides_[d];
  }
  if (data == nullptr && extent > 0) {
    throw ValueError("from_blob: null data for shape " + shape_to_string(shape));
  }
  t.storage_ = std::make_shared<Storage>(
      data, static_cast<size_t>(extent) * collie::element_size(dtype), std::move(deleter));
  return t;
}

int64_t Tensor::size(int64_t d) const {
  return shape_[static_cast<size_t>(normalize_dim(d, dim(), "Tensor::size"))];
}

int64_t Tensor::numel() const { return shape_numel(shape_); }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    // A dim of size 1 is never stepped over, so its stride does not matter.
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(storage_->data()) +
         offset_ * static_cast<int64_t>(collie::element_size(dtype_));
}

Tensor Tensor::contiguous() const {
  if (is_contiguous() && offset_ == 0) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor copy = empty(shape_, dtype_);
  copy.copy_from(*this);
  return copy;
}

Tensor Tensor::reshape(const Shape& shape) const {
  const Shape resolved = infer_shape(shape, numel(), shape_);
  if (!is_contiguous()) return clone().reshape(resolved);
  Tensor view = *this;
  view.shape_ = resolved;
  view.strides_ = contiguous_strides(resolved);
  return view;
}

Tensor Tensor::slice(int64_t start, int64_t end) const {
  if (dim() == 0) throw ValueError("slice: cannot slice a 0-d tensor");
  if (start < 0 || start > end || end > shape_[0]) {
    throw ValueError("slice: rows [" + std::to_string(start) + ", " + std::to_string(end) +
                     ") are out of range for shape " + shape_to_string(shape_));
  }
  Tensor view = *this;
  view.shape_[0] = end - start;
  view.offset_ += start * strides_[0];
  return view;
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const auto d0 = static_cast<size_t>(normalize_dim(dim0, dim(), "transpose"));
  const auto d1 = static_cast<size_t>(normalize_dim(dim1, dim(), "transpose"));
  Tensor view = *this;
  std::swap(view.shape_[d0], view.shape_[d1]);
  std::swap(view.strides_[d0], view.strides_[d1]);
  return view;
}

std::vector<Tensor> Tensor::split(int64_t parts) const {
  if (dim() == 0) throw ValueError("split: cannot split a 0-d tensor");
  if (parts <= 0 || shape_[0] % parts != 0) {
    throw ValueError("split: dim 0 of shape " + shape_to_string(shape_) + " cannot be split into " +
                     std::to_string(parts) + " equal parts");
  }
  return split(std::vector<int64_t>(static_cast<size_t>(parts), shape_[0] / parts));
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes) const {
  if (dim() == 0) throw ValueError("split: cannot split a 0-d tensor");
  int64_t total = 0;
  for (int64_t rows : sizes) {
    if (rows < 0) throw ValueError("split: negative size " + std::to_string(rows));
    total += rows;
  }
  if (total != shape_[0]) {
    throw ValueError("split: sizes " + shape_to_string(sizes) + " sum to " + std::to_string(total) +
                     ", but dim 0 of shape " + shape_to_string(shape_) + " is " +
                     std::to_string(shape_[0]));
  }
  std::vector<Tensor> parts;
  parts.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t rows : sizes) {
    parts.push_back(slice(start, start + rows));
    start += rows;
  }
  return parts;
}

int64_t Tensor::element_offset(std::initializer_list<int64_t> index) const {
  const Shape idx(index);
  bool valid = idx.size() == shape_.size();
  int64_t offset = offset_;
  for (size_t d = 0; valid && d < idx.size(); ++d) {
    valid = idx[d] >= 0 && idx[d] < shape_[d];
    offset += idx[d] * strides_[d];
  }
  if (!valid) {
    throw ValueError("at: index " + shape_to_string(idx) + " is out of bounds for shape " +
                     shape_to_string(shape_));
  }
  return offset;
}

}  // namespace collie
