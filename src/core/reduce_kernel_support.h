// What the CPU-specific reduction kernels (reduce_kernels_avx2.cc,
// reduce_kernels_avx512.cc) share: the sources as typed pointers, and the
// ReduceOp and the 32- or 64-bit dtype chosen at run time made template
// arguments.
//
//   const TypedSources<float> typed(srcs, nsrc);
//   return for_reduce_op(op, [&](auto o) {
//     return reduce_vectors<Float32x16, decltype(o)::value>(out, typed.get(), nsrc, count);
//   });
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::detail {

// The sources as `T` pointers, on the stack for the usual group sizes.
template <typename T>
class TypedSources {
 public:
  TypedSources(const void* const* srcs, size_t n) {
    if (n > kInline) {
      heap_.resize(n);
      typed_ = heap_.data();
    }
    for (size_t k = 0; k < n; ++k) typed_[k] = static_cast<const T*>(srcs[k]);
  }
  TypedSources(const TypedSources&) = delete;
  TypedSources& operator=(const TypedSources&) = delete;
  const T* const* get() const { return typed_; }

 private:
  static constexpr size_t kInline = 16;
  const T* inline_[kInline];
  std::vector<const T*> heap_;
  const T** typed_ = inline_;
};

// fn(std::integral_constant<ReduceOp, op>{}): what it returns, or 0 for an
// invalid op (the portable kernels report it).
template <typename Fn>
size_t for_reduce_op(ReduceOp op, Fn&& fn) {
  switch (op) {
    case ReduceOp::SUM:
      return fn(std::integral_constant<ReduceOp, ReduceOp::SUM>{});
    case ReduceOp::PROD:
      return fn(std::integral_constant<ReduceOp, ReduceOp::PROD>{});
    case ReduceOp::MIN:
      return fn(std::integral_constant<ReduceOp, ReduceOp::MIN>{});
    case ReduceOp::MAX:
      return fn(std::integral_constant<ReduceOp, ReduceOp::MAX>{});
  }
  return 0;
}

// fn(V{}) for the vector type V that a kernel set's `Vectors` names for dtype
// (Vectors::Float32, Float64, Int32, Int64): what it returns, or 0 for
// another dtype.
template <typename Vectors, typename Fn>
size_t for_wide_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(typename Vectors::Float32{});
    case DType::Float64:
      return fn(typename Vectors::Float64{});
    case DType::Int32:
      return fn(typename Vectors::Int32{});
    case DType::Int64:
      return fn(typename Vectors::Int64{});
    default:
      return 0;
  }
}

}  // namespace collie::detail
