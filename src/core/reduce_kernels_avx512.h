// Reductions with AVX-512, chosen at run time where they were measured faster.
//
// The AVX2 kernels (reduce_kernels_avx2.h) do sixteen bfloat16 elements in
// about ten instructions; here one instruction covers twice the elements, and
// bfloat16's NaN fix-up is a masked OR instead of compares, a test and blends.
// One core, 2 sources of 4 Ki-64 Ki elements in cache (AMD EPYC Zen 5, ns per
// element, AVX2 -> AVX-512): bfloat16 0.108-0.120 -> 0.052, float16 0.070 ->
// 0.043, float32 0.080-0.100 -> 0.071-0.075, int64 even (0.15-0.23). Tails
// are masked loads and stores, so every element of a call is done here.
//
// The same kernels on data another core has just written (a peer's slot):
// float32, 64 KiB, 5.9 -> 4.3 us. In the collectives (2 ranks, the same VM,
// alternating runs, medians): bfloat16 all_reduce, reduce_scatter and reduce
// of 64 KiB-4 MiB 1.19-2.02x faster, float16 1.09-1.31x at 64-512 KiB (even at
// 4 MiB); float32, float64 and int32 at 64 KiB 1.11-1.39x in one phase of the
// VM (eight alternations; 0.95-1.31x at 256 KiB), float32 at 64 KiB 3 % slower
// in another (five), even from 1 MiB, where moving the data takes the time. So reduce_n uses
// them for every dtype on AMD family 1Ah (Zen 5) and later, where they were
// measured (reduce_kernels.h); COLLIE_REDUCE_KERNELS=avx512 asks for them on
// any CPU that runs them (Intel's AVX-512 cores before Ice Lake lower their
// clock for 512-bit arithmetic, and Zen 4 runs it in two halves: neither was
// measured).

// Results are bitwise those of the portable kernels, as the AVX2 ones are
// (test_reduce_kernels.cc compares every kernel set the CPU runs over every
// float16 and bfloat16 value and random sources), but for which NaN's payload
// a sum or product of two NaNs keeps. The rounding to bfloat16 is integer
// arithmetic as in the AVX2 kernels, not AVX512_BF16's conversion, which
// flushes subnormals to zero.
//
// Example (what reduce_n does for bfloat16 where the CPU prefers these):
//   reduce_16bit_floats_avx512(dst, srcs, nsrc, count, DType::BFloat16, op);
#pragma once

#include <cstddef>
#include <string_view>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::detail {

// Whether this CPU and its operating system run the kernels here: AVX-512
// F, DQ, BW and VL, with the ZMM and mask registers saved (read once). False
// off x86-64.
bool avx512_kernels_available();

// Whether a CPU with this CPUID vendor string and family (core/cpu_id.h) uses
// them by default (above): AMD family 1Ah and later.
bool avx512_kernels_preferred_for_cpu(std::string_view vendor, unsigned family);

// Reduces the count float16 or bfloat16 elements of the sources into dst, as
// reduce_n does (in source order, accumulated in float32, rounded once), and
// returns count; 0 for another dtype or an invalid op. Needs
// avx512_kernels_available(). dst may alias any source.
size_t reduce_16bit_floats_avx512(void* dst, const void* const* srcs, int nsrc, size_t count,
                                  DType dtype, ReduceOp op);

// The same for float32, float64, int32 and int64 (integers wrapping, as the
// portable kernels' unsigned arithmetic does).
size_t reduce_wide_avx512(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
                          ReduceOp op);

}  // namespace collie::detail
