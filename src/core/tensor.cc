// Tensor construction, metadata, and views (slice, transpose, split, reshape).
#include "collie/tensor.h"

#include <cmath>
#include <string>
#include <utility>

#include "collie/errors.h"
#include "core/element.h"
#include "core/shape_check.h"
#include "core/small_pool.h"

namespace collie {

namespace detail {

void check_shape(const Shape& shape) {
  int64_t numel = 1;
  for (int64_t extent : shape) {
    if (extent < 0) {
      throw ValueError("invalid shape " + shape_to_string(shape) + ": sizes must be >= 0");
    }
    // Every new tensor checks its shape: an overflow test, not a division.
    if (__builtin_mul_overflow(numel, extent, &numel)) {
      throw ValueError("shape " + shape_to_string(shape) + " has too many elements");
    }
  }
  // Its bytes must fit too, at any element size: 2^62 float64 elements are
  // 2^65 bytes, which wrapped to a zero-byte storage under a tensor of 2^62.
  if (numel > kMaxElements) {
    throw ValueError("shape " + shape_to_string(shape) + " has too many elements (at most " +
                     std::to_string(kMaxElements) + ")");
  }
}

}  // namespace detail

namespace {

using detail::check_shape;

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
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
  // The message is built only on failure: built up front, it cost every reshape
  // ~2,000 instructions and three allocations.
  auto cannot = [&] {
    return ValueError("reshape: cannot reshape a tensor of shape " + shape_to_string(from) + " (" +
                      std::to_string(numel) + " elements) into shape " +
                      shape_to_string(requested));
  };
  if (inferred >= 0) {
    if (known == 0 || numel % known != 0) throw cannot();
    shape[static_cast<size_t>(inferred)] = numel / known;
  } else if (known != numel) {
    throw cannot();
  }
  return shape;
}

}  // namespace

namespace detail {

// The only owner needs no read-modify-write: no one else can see the count
// (copying a reference it holds would race with this), as libstdc++'s
// shared_ptr does too. The acquire load pairs with the other owners' releases.
void LayoutRef::drop(const TensorLayout* p) {
  if (p->owners.load(std::memory_order_acquire) == 1 ||
      p->owners.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete p;
  }
}

namespace {

// How long a new layout lives: as long as its owners (counted), or for the
// whole process, owners not counted (LayoutRef): always (kImmortal, for the
// function statics that hold a layout anyway), or while fewer than
// kMaxImmortalLayouts of the per-thread caches' layouts are (kImmortalIfRoom).
enum class Lifetime { kCounted, kImmortalIfRoom, kImmortal };

// Enough for the shapes a training loop makes outputs of, and bounded for a
// program that makes ever new shapes (each layout is ~150 bytes).
constexpr size_t kMaxImmortalLayouts = 4096;

void make_immortal(TensorLayout& layout, Lifetime lifetime) {
  if (lifetime == Lifetime::kCounted) return;
  if (lifetime == Lifetime::kImmortalIfRoom) {
    static std::atomic<size_t> taken{0};
    // Where leak checkers see the layouts reachable once the caches that held
    // them are gone; atomic, so the stores stay although nothing reads them.
    static std::atomic<const TensorLayout*> kept[kMaxImmortalLayouts];
    const size_t slot = taken.fetch_add(1, std::memory_order_relaxed);
    if (slot >= kMaxImmortalLayouts) return;
    kept[slot].store(&layout, std::memory_order_relaxed);
  }
  layout.immortal = true;
}

LayoutRef make_layout(Shape shape, Shape strides, Lifetime lifetime = Lifetime::kCounted) {
  auto* layout = new TensorLayout();
  layout->numel = shape_numel(shape);
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0 && layout->numel != 0;) {
    // A dim of size 1 is never stepped over, so its stride does not matter.
    if (shape[d] != 1 && strides[d] != expected) layout->contiguous = false;
    expected *= shape[d];
  }
  layout->shape = std::move(shape);
  layout->strides = std::move(strides);
  make_immortal(*layout, lifetime);
  return LayoutRef(layout);
}

// The contiguous layout of `shape`. A training loop makes outputs of a handful
// of shapes over and over: the last few layouts made on this thread are reused.
// A new shape is checked (check_shape) before its layout is made; a cached one
// passed that check when it was made, so a hit skips it.
LayoutRef contiguous_layout(const Shape& shape) {
  constexpr size_t kCached = 8;
  struct Cache {
    LayoutRef entries[kCached];
    size_t next = 0;      // where the next new layout goes
    size_t last_hit = 0;  // tried first: a loop asks for the same shape again and again
  };
  // 0-d tensors (scalars, batch_isend_irecv's placeholders) share one layout.
  if (shape.empty()) {
    static const LayoutRef scalar = make_layout({}, {}, Lifetime::kImmortal);
    return scalar;
  }
  thread_local Cache cache;
  // The entry that matched last goes first: a loop asks for one shape again and
  // again. Shapes have a few extents, so an inline loop compares them (vector's ==
  // calls memcmp: ~15 instructions more for a 1-d shape).
  auto same = [&shape](const Shape& cached) {
    if (cached.size() != shape.size()) return false;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (cached[d] != shape[d]) return false;
    }
    return true;
  };
  if (const auto& entry = cache.entries[cache.last_hit]; entry.get() && same(entry->shape)) {
    return entry;
  }
  for (size_t i = 0; i < kCached; ++i) {
    const auto& entry = cache.entries[i];
    if (entry.get() && same(entry->shape)) {
      cache.last_hit = i;
      return entry;
    }
  }
  check_shape(shape);
  cache.last_hit = cache.next++ % kCached;
  // The shapes that come back (why they are cached) last for the process.
  cache.entries[cache.last_hit] =
      make_layout(shape, contiguous_strides(shape), Lifetime::kImmortalIfRoom);
  return cache.entries[cache.last_hit];
}

// The contiguous layout of `of`'s shape with dim 0 set to `rows` (a 0-d shape
// becomes [rows]): the output of a collective that gathers or scatters rows.
// Kept per thread for each (layout, rows): building the shape and looking it up
// in contiguous_layout cost an all_gather of 8 B ~130 of its ~2,200
// instructions. An entry holds `of`, so no other layout can take its address
// while it is cached.
LayoutRef layout_with_rows(const LayoutRef& of, int64_t rows) {
  constexpr size_t kCached = 4;
  struct Entry {
    LayoutRef of;
    int64_t rows = 0;
    LayoutRef layout;
  };
  struct Cache {
    Entry entries[kCached];
    size_t next = 0;
  };
  thread_local Cache cache;
  for (const Entry& e : cache.entries) {
    if (e.of == of && e.rows == rows) return e.layout;
  }
  Shape shape = of->shape;
  if (shape.empty()) {
    shape.push_back(rows);
  } else {
    shape[0] = rows;
  }
  auto layout = contiguous_layout(shape);  // checks the shape
  cache.entries[cache.next++ % kCached] = Entry{of, rows, layout};
  return layout;
}

}  // namespace
}  // namespace detail

using detail::contiguous_layout;
using detail::make_layout;

namespace {
// Every collective's output makes one: from the per-thread pool (core/small_pool.h).
template <typename... Args>
std::shared_ptr<Storage> make_storage(Args&&... args) {
  return std::allocate_shared<Storage>(detail::PoolAllocator<Storage>{},
                                       std::forward<Args>(args)...);
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
Tensor::Tensor() {
  static const auto shared_empty = make_storage(0);
  static const auto empty_layout = make_layout({0}, {1}, detail::Lifetime::kImmortal);
  storage_ = shared_empty;
  layout_ = empty_layout;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  Tensor t{Bare{}};
  t.dtype_ = dtype;
  t.layout_ = contiguous_layout(shape);  // checks the shape
  t.storage_ = make_storage(t.nbytes());
  return t;
}

Tensor Tensor::uninitialized(const Shape& shape, DType dtype) {
  Tensor t{Bare{}};
  t.dtype_ = dtype;
  t.layout_ = contiguous_layout(shape);  // checks the shape
  t.storage_ = make_storage(t.nbytes(), /*zero=*/false);
  return t;
}

Tensor Tensor::uninitialized_like(const Tensor& like) {
  if (!like.is_contiguous()) return uninitialized(like.shape(), like.dtype());
  Tensor t{Bare{}};
  t.dtype_ = like.dtype_;
  t.layout_ = like.layout_;  // checked when `like` was made
  t.storage_ = make_storage(like.nbytes(), /*zero=*/false);
  return t;
}

Tensor Tensor::uninitialized_rows_like(const Tensor& like, int64_t rows) {
  Tensor t{Bare{}};
  t.dtype_ = like.dtype_;
  t.layout_ = detail::layout_with_rows(like.layout_, rows);
  t.storage_ = make_storage(t.nbytes(), /*zero=*/false);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) { return empty(shape, dtype); }

Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = uninitialized(shape, dtype);  // every element is written below
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
  t.layout_ = strides.empty() ? contiguous_layout(shape) : make_layout(shape, strides);
  // The extent the view can reach: one past the element with the largest offset
  // (a contiguous view, as every empty_shared() tensor, reaches every element).
  const int64_t numel = shape_numel(shape);
  int64_t extent = numel;
  if (!strides.empty() && numel > 0) {
    extent = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (strides[d] < 0) {
        throw ValueError("from_blob: negative strides are not supported, got " +
                         shape_to_string(strides));
      }
      extent += (shape[d] - 1) * strides[d];
    }
  }
  if (data == nullptr && extent > 0) {
    throw ValueError("from_blob: null data for shape " + shape_to_string(shape));
  }
  t.storage_ = make_storage(data, static_cast<size_t>(extent) * collie::element_size(dtype),
                            std::move(deleter));
  return t;
}

int64_t Tensor::size(int64_t d) const {
  return shape()[static_cast<size_t>(normalize_dim(d, dim(), "Tensor::size"))];
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
  Tensor copy = empty(shape(), dtype_);
  copy.copy_from(*this);
  return copy;
}

Tensor Tensor::reshape(const Shape& shape) const {
  const Shape resolved = infer_shape(shape, numel(), this->shape());
  if (!is_contiguous()) return clone().reshape(resolved);
  Tensor view = *this;
  view.layout_ = contiguous_layout(resolved);
  return view;
}

Tensor Tensor::slice(int64_t start, int64_t end) const {
  if (dim() == 0) throw ValueError("slice: cannot slice a 0-d tensor");
  if (start < 0 || start > end || end > shape()[0]) {
    throw ValueError("slice: rows [" + std::to_string(start) + ", " + std::to_string(end) +
                     ") are out of range for shape " + shape_to_string(shape()));
  }
  Tensor view = *this;
  if (is_contiguous()) {
    // Rows of a contiguous tensor are contiguous: their layout comes from the
    // per-thread cache (split() and the list form of all_to_all slice every call;
    // a new layout is two allocations).
    view.layout_ = detail::layout_with_rows(layout_, end - start);
  } else {
    Shape rows = shape();
    rows[0] = end - start;
    view.layout_ = make_layout(std::move(rows), strides());
  }
  view.offset_ += start * strides()[0];
  return view;
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const auto d0 = static_cast<size_t>(normalize_dim(dim0, dim(), "transpose"));
  const auto d1 = static_cast<size_t>(normalize_dim(dim1, dim(), "transpose"));
  Shape shape = this->shape(), strides = this->strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  Tensor view = *this;
  view.layout_ = make_layout(std::move(shape), std::move(strides));
  return view;
}

std::vector<Tensor> Tensor::split(int64_t parts) const {
  if (dim() == 0) throw ValueError("split: cannot split a 0-d tensor");
  if (parts <= 0 || shape()[0] % parts != 0) {
    throw ValueError("split: dim 0 of shape " + shape_to_string(shape()) +
                     " cannot be split into " + std::to_string(parts) + " equal parts");
  }
  return split(std::vector<int64_t>(static_cast<size_t>(parts), shape()[0] / parts));
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes) const {
  if (dim() == 0) throw ValueError("split: cannot split a 0-d tensor");
  int64_t total = 0;
  for (int64_t rows : sizes) {
    if (rows < 0) throw ValueError("split: negative size " + std::to_string(rows));
    total += rows;
  }
  if (total != shape()[0]) {
    throw ValueError("split: sizes " + shape_to_string(sizes) + " sum to " + std::to_string(total) +
                     ", but dim 0 of shape " + shape_to_string(shape()) + " is " +
                     std::to_string(shape()[0]));
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
  const Shape& shape = this->shape();
  bool valid = idx.size() == shape.size();
  int64_t offset = offset_;
  for (size_t d = 0; valid && d < idx.size(); ++d) {
    valid = idx[d] >= 0 && idx[d] < shape[d];
    offset += idx[d] * strides()[d];
  }
  if (!valid) {
    throw ValueError("at: index " + shape_to_string(idx) + " is out of bounds for shape " +
                     shape_to_string(shape));
  }
  return offset;
}

}  // namespace collie
