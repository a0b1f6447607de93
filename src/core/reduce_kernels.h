// Element-wise reduction kernels used by every backend.
//
// reduce_n combines n source buffers into dst, element by element, always in the
// order srcs[0], srcs[1], ..., srcs[n-1], so every rank that reduces the same
// inputs gets bitwise identical results. Float16 and BFloat16 are widened to float
// and accumulated in float32 across all n inputs, rounded once at the end.
// Bool: SUM and MAX are logical or, PROD and MIN logical and. Integer SUM/PROD wrap
// (two's complement), as in numpy.
//
// Example:
//   const void* srcs[2] = {a, b};
//   collie::detail::reduce_n(out, srcs, 2, count, DType::Float32, ReduceOp::SUM);
#pragma once

#include <cstddef>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::detail {

// dst may alias any source. nsrc >= 1. count elements of `dtype`.
void reduce_n(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype, ReduceOp op);

// reduce_n without the CPU-specific kernels (reduce_kernels_avx2.h), whose
// results must be these, bit for bit: what tests compare them with.
void reduce_n_portable(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
                       ReduceOp op);

}  // namespace collie::detail
