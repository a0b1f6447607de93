// Reductions with AVX2 (and F16C for float16), chosen at run time.
//
// The portable kernels (reduce_kernels.cc) widen and narrow the 16-bit formats
// with integer arithmetic, which GCC vectorises poorly for the baseline x86-64
// ISA (SSE2, what collie is compiled for): 2 sources in L2, 2.3 ns per float16
// element and 0.64 per bfloat16, against 0.12 per float32. Mixed-precision
// gradients are the 16-bit formats, so these do the same arithmetic eight or
// sixteen elements at a time: F16C's conversions for float16 (exact widening,
// rounding to nearest even), shifts and AVX2 integer rounding for bfloat16:
// 0.057 ns per float16 element, 0.12 per bfloat16 (2 ranks, all_reduce of
// 4 MiB: float16 2.94 -> 0.43 ms, bfloat16 1.07 -> 0.46, float32 0.44-0.49).
// Results are bitwise those of the portable kernels (test_reduce_kernels.cc
// compares them over every float16 and bfloat16 value and random sources),
// but for which NaN's payload a sum or product of two NaNs keeps.
//
// The code is compiled for AVX2 per function (target attributes), never per
// file: a file compiled with -mavx2 would also emit AVX2 copies of the inline
// and template functions it uses (std::vector's, say), which the linker may
// then pick for callers on CPUs without AVX2.
//
// Example (what reduce_n does where it runs the AVX2 set, reduce_kernels.h):
//   size_t done = 0;
//   if (avx2_kernels_available())
//     done = reduce_16bit_floats_avx2(dst, srcs, nsrc, count, dtype, op);
//   // elements [done, count) by the portable kernels
#pragma once

#include <cstddef>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::detail {

// Whether this CPU has AVX2 and F16C (read once), which every kernel here needs.
// False off x86-64.
bool avx2_kernels_available();

// Reduces the first count / 8 * 8 elements of the float16 or bfloat16 sources
// into dst, as reduce_n does (in source order, accumulated in float32, rounded
// once), and returns how many it did; 0 for another dtype or an invalid op.
// Needs avx2_kernels_available(). dst may alias any source.
size_t reduce_16bit_floats_avx2(void* dst, const void* const* srcs, int nsrc, size_t count,
                                DType dtype, ReduceOp op);

// The same for float32 and int32 (eight at a time), float64 and int64 (four):
// the first count / 8 * 8 (count / 4 * 4) elements, each folded over the
// sources in order as the portable kernels do (integers wrapping), which the
// baseline ISA runs four (two) at a time, with a block set-up that costs more
// than a small collective's reduction itself. One core, 2 sources in cache, per
// element: 512 float32 0.27 -> 0.085 ns, 64 Ki 0.141 -> 0.110 ns; from memory
// both run at its speed. Returns how many were done; 0 for another dtype or an
// invalid op. Needs avx2_kernels_available(). dst may alias any source.
size_t reduce_wide_avx2(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
                        ReduceOp op);

}  // namespace collie::detail
