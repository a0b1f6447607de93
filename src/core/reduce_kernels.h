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
#include <string>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::detail {

// dst may alias any source. nsrc >= 1. count elements of `dtype`.
void reduce_n(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype, ReduceOp op);

// reduce_n without the CPU-specific kernels (reduce_kernels_avx2.h,
// reduce_kernels_avx512.h), whose results must be these, bit for bit: what
// tests compare them with.
void reduce_n_portable(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
                       ReduceOp op);

// The kernel sets reduce_n can run for float16, bfloat16, float32, float64,
// int32 and int64, slowest first. Each gives the portable results bit for bit
// (but for which NaN's payload a sum or product of two NaNs keeps).
enum class ReduceKernels { kPortable, kAvx2, kAvx512 };

// The set reduce_n runs, chosen once per process: the one
// COLLIE_REDUCE_KERNELS names (portable, avx2 or avx512) where it is set and
// not `auto`, else the fastest this CPU runs and prefers: AVX-512 on AMD
// family 1Ah and later (reduce_kernels_avx512.h), else AVX2 where the CPU has
// it and F16C, else the portable code. ValueError for another value or a set
// this CPU cannot run (init() asks, so a job learns it at once).
ReduceKernels reduce_kernels_in_use();

// Whether this CPU runs `kernels` (the portable ones run everywhere).
bool reduce_kernels_available(ReduceKernels kernels);

// "portable", "avx2" or "avx512": COLLIE_REDUCE_KERNELS's values.
const char* reduce_kernels_name(ReduceKernels kernels);

// The set in use and what chose it, for people (`collie info`, `collie
// bench`): "avx512 (AuthenticAMD family 0x1a)", "portable
// (COLLIE_REDUCE_KERNELS)". ValueError as reduce_kernels_in_use().
std::string describe_reduce_kernels();

// reduce_n with the given set, which this CPU must run (ValueError if not):
// how tests compare every set the CPU has with the portable kernels.
void reduce_n_with(ReduceKernels kernels, void* dst, const void* const* srcs, int nsrc,
                   size_t count, DType dtype, ReduceOp op);

}  // namespace collie::detail
