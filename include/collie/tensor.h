// collie/tensor.h — a strided n-dimensional array: the data every collective takes.
//
// A Tensor is a dtype, a shape, strides (in elements) and a storage offset over a
// shared Storage. The storage is either owned (allocated by collie) or a view on
// caller memory (from_blob), in which case the caller keeps the memory alive or
// hands collie a deleter. Copies of a Tensor share storage (like torch/numpy
// views); clone() makes an independent copy.
//
// Collectives read their inputs through contiguous() and always return new,
// owning, contiguous tensors: inputs are never modified.
//
// Example:
//   auto x = collie::Tensor::arange(8, collie::DType::Float32).reshape({4, 2});
//   std::cout << x;                     // [[0. 1.]\n [2. 3.]\n [4. 5.]\n [6. 7.]]
//   auto parts = x.split(2);            // two [2, 2] views on rows 0-1 and 2-3
//   auto y = collie::Tensor::cat(parts);  // a new [4, 2] tensor equal to x
//   float v = x.at<float>({3, 1});      // 7
//   std::vector<float> buf(6, 1.f);
//   auto view = collie::Tensor::from_blob(buf.data(), {2, 3}, collie::DType::Float32);
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "collie/dtype.h"

namespace collie {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for the 0-d shape {}).
int64_t shape_numel(const Shape& shape);
// "[2, 8]"
std::string shape_to_string(const Shape& shape);

// Bytes a tensor points into. Owned storage is 64-byte aligned.
class Storage {
 public:
  // Allocates `nbytes` bytes, zero-initialised unless `zero` is false. Up to
  // kInlineBytes live inside the Storage itself (one allocation for a small
  // tensor: its Storage); larger blocks come from (and return to) a small cache,
  // so that repeated collectives on big tensors do not fault in fresh pages
  // every call. Either way the data is 64-byte aligned.
  explicit Storage(size_t nbytes, bool zero = true);
  // Wraps caller memory; `deleter` (may be empty) runs when the last user goes away.
  Storage(void* data, size_t nbytes, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool owned() const { return owned_; }

  static constexpr size_t kInlineBytes = 64;

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  size_t capacity_ = 0;  // bytes allocated from the block cache (0: inline or not owned)
  bool owned_ = false;
  std::function<void(void*)> deleter_;
  alignas(64) unsigned char inline_[kInlineBytes];  // the data when it fits
};

namespace detail {
// A tensor's shape and strides (in elements), immutable once made. Copies and
// views with the same layout share one, and a new contiguous tensor takes a
// recently made layout of its shape from a small per-thread cache, so neither
// copying a tensor nor creating the output of a collective allocates for its
// metadata.
struct TensorLayout {
  Shape shape;
  Shape strides;
  int64_t numel = 0;
  bool contiguous = true;  // row-major (a dim of size 1 may have any stride)
  // Never freed, its owners not counted (LayoutRef): set before the layout is
  // shared, never changed after.
  bool immortal = false;
  mutable std::atomic<int64_t> owners{1};  // the LayoutRefs holding it, unless immortal
};

// Shared ownership of a TensorLayout, as std::shared_ptr would give, except for
// immortal layouts: the layouts of the shapes a process makes outputs of (the
// first kMaxImmortalLayouts the per-thread caches make, tensor.cc) and of
// default and 0-d tensors are never freed, so copying or dropping a reference to
// one is a plain copy. Each reference count update is an atomic
// read-modify-write, a locked instruction (a full barrier on x86); with two per
// tensor made or copied they were 2 of an 8 B all_reduce's ~15 and 8 of a
// send_recv's ~30 (docs/performance_history.md, "Locked instructions counted").
class LayoutRef {
 public:
  LayoutRef() = default;
  // Takes over a layout made with new, its one owner counted already.
  explicit LayoutRef(const TensorLayout* made) : p_(made) {}
  LayoutRef(const LayoutRef& other) : p_(other.p_) { retain(p_); }
  LayoutRef(LayoutRef&& other) noexcept : p_(other.p_) { other.p_ = nullptr; }
  LayoutRef& operator=(const LayoutRef& other) {
    retain(other.p_);  // first: other may be the last owner of p_'s layout too
    release(p_);
    p_ = other.p_;
    return *this;
  }
  LayoutRef& operator=(LayoutRef&& other) noexcept {
    if (this != &other) {
      release(p_);
      p_ = other.p_;
      other.p_ = nullptr;
    }
    return *this;
  }
  ~LayoutRef() { release(p_); }

  const TensorLayout* operator->() const { return p_; }
  const TensorLayout* get() const { return p_; }
  friend bool operator==(const LayoutRef& a, const LayoutRef& b) { return a.p_ == b.p_; }

 private:
  static void retain(const TensorLayout* p) {
    if (p != nullptr && !p->immortal) p->owners.fetch_add(1, std::memory_order_relaxed);
  }
  static void release(const TensorLayout* p) {
    if (p != nullptr && !p->immortal) drop(p);
  }
  static void drop(const TensorLayout* p);  // counts one owner less; the last frees it
  const TensorLayout* p_ = nullptr;
};
}  // namespace detail

class Tensor {
 public:
  // An empty float32 tensor of shape [0].
  Tensor();

  // ---- factories (all return owning, contiguous tensors) ----
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32);  // zero-filled
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
  // Contents unspecified: for outputs that are about to be overwritten entirely.
  static Tensor uninitialized(const Shape& shape, DType dtype = DType::Float32);
  // uninitialized(like.shape(), like.dtype()) (torch's empty_like); a contiguous
  // `like` lends its layout, so nothing is looked up for it.
  static Tensor uninitialized_like(const Tensor& like);
  // uninitialized() of like's shape with dim 0 = `rows` (a 0-d `like` gives
  // [rows]) and like's dtype: the output of a call that gathers or scatters rows.
  // The layout is reused per thread for each (like's layout, rows), so a loop
  // of such calls builds and looks up no shape. ValueError if rows < 0.
  static Tensor uninitialized_rows_like(const Tensor& like, int64_t rows);
  static Tensor ones(const Shape& shape, DType dtype = DType::Float32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
  // 0-d tensor holding `value`.
  static Tensor scalar(double value, DType dtype = DType::Float32);
  // [start, end) with `step`, 1-d.
  static Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::Float32);
  static Tensor arange(int64_t n, DType dtype = DType::Float32);
  // Copies `values` into a new tensor of `shape` (numel must match; ValueError otherwise).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())});
  }
  // A view on caller memory. `strides` in elements; empty = contiguous.
  static Tensor from_blob(void* data, const Shape& shape, DType dtype, const Shape& strides = {},
                          std::function<void(void*)> deleter = {});
  // Concatenates along dim 0 (all dims but 0 and dtypes must match; ValueError otherwise).
  static Tensor cat(const std::vector<Tensor>& tensors);

  // ---- metadata ----
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return layout_->shape; }
  const Shape& strides() const { return layout_->strides; }
  int64_t storage_offset() const { return offset_; }
  int64_t dim() const { return static_cast<int64_t>(layout_->shape.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return layout_->numel; }
  size_t element_size() const { return collie::element_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const { return layout_->contiguous; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to the first element (storage data + offset).
  void* data_ptr() const;
  template <typename T>
  T* data() const;  // TypeError when T does not match dtype()

  // ---- views and copies ----
  // This tensor if contiguous with offset 0... or a contiguous copy otherwise.
  Tensor contiguous() const;
  Tensor clone() const;  // always a new contiguous copy
  // Same elements, new shape; one dim may be -1. A view when contiguous, else a copy.
  Tensor reshape(const Shape& shape) const;
  // Rows [start, end) of dim 0, a view.
  Tensor slice(int64_t start, int64_t end) const;
  // Swaps two dims, a (non-contiguous) view.
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  // Splits dim 0 into `parts` equal views (ValueError if not divisible).
  std::vector<Tensor> split(int64_t parts) const;
  // Splits dim 0 into views of the given row counts (must sum to size(0)).
  std::vector<Tensor> split(const std::vector<int64_t>& sizes) const;
  // Element-wise conversion to another dtype (new tensor).
  Tensor to(DType dtype) const;
  // Copies src's elements into this tensor (same numel, any strides, converting dtype).
  void copy_from(const Tensor& src);

  // ---- element access ----
  template <typename T>
  T& at(std::initializer_list<int64_t> index) const;  // bounds-checked (ValueError)
  // Element `i` in row-major order, converted to double (any dtype, any strides).
  double item(int64_t flat_index = 0) const;
  // All elements, row-major, as doubles.
  std::vector<double> to_double_vector() const;

  // Same shape, dtype and values (bitwise for integers; NaN == NaN).
  bool equal(const Tensor& other) const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8) const;

  // numpy-like text: "[[2. 2.]\n [2. 2.]]", "[0 1 2]", "1.5" for 0-d.
  std::string to_string() const;

 private:
  std::shared_ptr<Storage> storage_;
  detail::LayoutRef layout_;
  DType dtype_ = DType::Float32;
  int64_t offset_ = 0;

  // A tensor whose members the caller sets (no default shape allocated first).
  struct Bare {};
  explicit Tensor(Bare) {}
  int64_t element_offset(std::initializer_list<int64_t> index) const;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- template definitions ----
void check_dtype_matches(DType actual, DType requested, const char* what);
void check_numel_matches(int64_t numel, const Shape& shape);  // ValueError on mismatch

template <typename T>
T* Tensor::data() const {
  check_dtype_matches(dtype_, dtype_of<T>, "Tensor::data<T>()");
  return static_cast<T*>(data_ptr());
}

template <typename T>
T& Tensor::at(std::initializer_list<int64_t> index) const {
  check_dtype_matches(dtype_, dtype_of<T>, "Tensor::at<T>()");
  return static_cast<T*>(storage_->data())[element_offset(index)];
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  check_numel_matches(static_cast<int64_t>(values.size()), shape);
  Tensor t = empty(shape, dtype_of<T>);
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace collie
