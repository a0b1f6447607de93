// What the CPU-specific reduction kernels (reduce_kernels_avx2.cc,
// reduce_kernels_avx512.cc) share: the sources as typed pointers, and the
// ReduceOp chosen at run time made a template argument.
//
//   const TypedSources<float> typed(srcs, nsrc);
//   return for_reduce_op(op, [&](auto op) {
//     return reduce_loop<F32, decltype(op)::value>(dst, typed.get(), nsrc, count);
//   });
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "collie/comm.h"

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

}  // namespace collie::detail
