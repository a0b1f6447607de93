// float16, bfloat16, float32, float64, int32 and int64 reductions with AVX-512
// (see reduce_kernels_avx512.h).
#include "core/reduce_kernels_avx512.h"

#include <cstdint>

#include "core/reduce_kernel_support.h"
#include "core/reduce_kernels_avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COLLIE_HAVE_AVX512_KERNELS 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace collie::detail {

bool avx512_kernels_preferred_for_cpu(std::string_view vendor, unsigned family) {
  return vendor == "AuthenticAMD" && family >= 0x1A;
}

#if COLLIE_HAVE_AVX512_KERNELS

namespace {

// As in reduce_kernels_avx2.cc: the target is given per function, never per
// file, and the helpers are forced inline into the loops that carry it.
#define COLLIE_AVX512 __attribute__((target("avx2,f16c,avx512f,avx512dq,avx512bw,avx512vl")))
#define COLLIE_AVX512_INLINE \
  __attribute__((target("avx2,f16c,avx512f,avx512dq,avx512bw,avx512vl"), always_inline)) inline

// acc op x on sixteen floats, as the portable SumOp/ProdOp/MinOp/MaxOp: MIN
// and MAX keep `acc` where it is NaN, so NaN propagates.
template <ReduceOp Op>
COLLIE_AVX512_INLINE __m512 apply16(__m512 acc, __m512 x) {
  if constexpr (Op == ReduceOp::SUM) {
    return _mm512_add_ps(acc, x);
  } else if constexpr (Op == ReduceOp::PROD) {
    return _mm512_mul_ps(acc, x);
  } else {
    const __mmask16 keep =
        _mm512_cmp_ps_mask(acc, x, Op == ReduceOp::MIN ? _CMP_LT_OQ : _CMP_GT_OQ) |
        _mm512_cmp_ps_mask(acc, acc, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(keep, x, acc);
  }
}

// The same on eight doubles.
template <ReduceOp Op>
COLLIE_AVX512_INLINE __m512d apply8(__m512d acc, __m512d x) {
  if constexpr (Op == ReduceOp::SUM) {
    return _mm512_add_pd(acc, x);
  } else if constexpr (Op == ReduceOp::PROD) {
    return _mm512_mul_pd(acc, x);
  } else {
    const __mmask8 keep =
        _mm512_cmp_pd_mask(acc, x, Op == ReduceOp::MIN ? _CMP_LT_OQ : _CMP_GT_OQ) |
        _mm512_cmp_pd_mask(acc, acc, _CMP_UNORD_Q);
    return _mm512_mask_blend_pd(keep, x, acc);
  }
}

// Each element type below is one vector of kLanes elements: its loads and
// stores, whole or masked to the first lanes (a tail), and acc op x.

struct Float32x16 {
  using Elem = float;
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr size_t kLanes = 16;
  COLLIE_AVX512_INLINE static Vec load(const Elem* p) { return _mm512_loadu_ps(p); }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p, Mask m) {
    return _mm512_maskz_loadu_ps(m, p);
  }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v) { _mm512_storeu_ps(p, v); }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  template <ReduceOp Op>
  COLLIE_AVX512_INLINE static Vec apply(Vec acc, Vec x) {
    return apply16<Op>(acc, x);
  }
};

struct Float64x8 {
  using Elem = double;
  using Vec = __m512d;
  using Mask = __mmask8;
  static constexpr size_t kLanes = 8;
  COLLIE_AVX512_INLINE static Vec load(const Elem* p) { return _mm512_loadu_pd(p); }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p, Mask m) {
    return _mm512_maskz_loadu_pd(m, p);
  }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v) { _mm512_storeu_pd(p, v); }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v, Mask m) { _mm512_mask_storeu_pd(p, m, v); }
  template <ReduceOp Op>
  COLLIE_AVX512_INLINE static Vec apply(Vec acc, Vec x) {
    return apply8<Op>(acc, x);
  }
};

struct Int32x16 {
  using Elem = int32_t;
  using Vec = __m512i;
  using Mask = __mmask16;
  static constexpr size_t kLanes = 16;
  // min and max in their zero-masking forms with every lane on: GCC 12's
  // plain ones pass an "undefined" vector that -Wmaybe-uninitialized reports.
  static constexpr Mask kAll = static_cast<Mask>(-1);
  COLLIE_AVX512_INLINE static Vec load(const Elem* p) { return _mm512_loadu_si512(p); }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p, Mask m) {
    return _mm512_maskz_loadu_epi32(m, p);
  }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v) { _mm512_storeu_si512(p, v); }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v, Mask m) {
    _mm512_mask_storeu_epi32(p, m, v);
  }
  template <ReduceOp Op>
  COLLIE_AVX512_INLINE static Vec apply(Vec acc, Vec x) {
    if constexpr (Op == ReduceOp::SUM) {
      return _mm512_add_epi32(acc, x);
    } else if constexpr (Op == ReduceOp::PROD) {
      return _mm512_mullo_epi32(acc, x);  // the low 32 bits of the product
    } else if constexpr (Op == ReduceOp::MIN) {
      return _mm512_maskz_min_epi32(kAll, acc, x);
    } else {
      return _mm512_maskz_max_epi32(kAll, acc, x);
    }
  }
};

struct Int64x8 {
  using Elem = int64_t;
  using Vec = __m512i;
  using Mask = __mmask8;
  static constexpr size_t kLanes = 8;
  static constexpr Mask kAll = static_cast<Mask>(-1);  // as Int32x16's
  COLLIE_AVX512_INLINE static Vec load(const Elem* p) { return _mm512_loadu_si512(p); }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p, Mask m) {
    return _mm512_maskz_loadu_epi64(m, p);
  }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v) { _mm512_storeu_si512(p, v); }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v, Mask m) {
    _mm512_mask_storeu_epi64(p, m, v);
  }
  template <ReduceOp Op>
  COLLIE_AVX512_INLINE static Vec apply(Vec acc, Vec x) {
    if constexpr (Op == ReduceOp::SUM) {
      return _mm512_add_epi64(acc, x);
    } else if constexpr (Op == ReduceOp::PROD) {
      return _mm512_mullo_epi64(acc, x);  // AVX512DQ: the low 64 bits, as AVX2's three products
    } else if constexpr (Op == ReduceOp::MIN) {
      return _mm512_maskz_min_epi64(kAll, acc, x);
    } else {
      return _mm512_maskz_max_epi64(kAll, acc, x);
    }
  }
};

// float16: sixteen elements widened exactly and narrowed rounding to nearest
// even, as F16C does eight (reduce_kernels_avx2.cc).
struct Float16x16 {
  using Elem = uint16_t;  // raw bits
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr size_t kLanes = 16;
  static constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  // The conversions' zero-masking forms with every lane on: GCC 12's plain
  // ones pass an "undefined" vector that -Wmaybe-uninitialized reports.
  static constexpr Mask kAll = static_cast<Mask>(-1);
  COLLIE_AVX512_INLINE static Vec widen(__m256i bits) { return _mm512_maskz_cvtph_ps(kAll, bits); }
  COLLIE_AVX512_INLINE static __m256i narrow(Vec v) {
    return _mm512_maskz_cvtps_ph(kAll, v, kRound);
  }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p, Mask m) {
    return widen(_mm256_maskz_loadu_epi16(m, p));
  }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow(v));
  }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v, Mask m) {
    _mm256_mask_storeu_epi16(p, m, narrow(v));
  }
  template <ReduceOp Op>
  COLLIE_AVX512_INLINE static Vec apply(Vec acc, Vec x) {
    return apply16<Op>(acc, x);
  }
};

// bfloat16: thirty-two elements as two vectors of floats, the even ones
// shifted up and the odd ones masked (float32's top halves: no shuffles), as
// the AVX2 kernel does sixteen.
struct BFloat16x32 {
  using Elem = uint16_t;  // raw bits
  struct Vec {
    __m512 even, odd;
  };
  using Mask = __mmask32;
  static constexpr size_t kLanes = 32;

  // Shifts in their zero-masking forms with every lane on, as Float16x16's
  // conversions (GCC 12's plain ones pass an "undefined" vector).
  COLLIE_AVX512_INLINE static __m512i shift_up(__m512i v) {
    return _mm512_maskz_slli_epi32(static_cast<__mmask16>(-1), v, 16);
  }
  COLLIE_AVX512_INLINE static __m512i shift_down(__m512i v) {
    return _mm512_maskz_srli_epi32(static_cast<__mmask16>(-1), v, 16);
  }
  COLLIE_AVX512_INLINE static __m512i top_halves() {
    return _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  }
  COLLIE_AVX512_INLINE static Vec split(__m512i v) {
    return {_mm512_castsi512_ps(shift_up(v)),
            _mm512_castsi512_ps(_mm512_and_si512(v, top_halves()))};
  }
  // float_to_bfloat16_bits (core/float16.h) on sixteen floats, the result in
  // each lane's top half: round to nearest even (overflow carries into
  // infinity); a NaN becomes a quiet NaN that keeps the top of its payload.
  COLLIE_AVX512_INLINE static __m512i rounded(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(shift_down(x), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x00400000));
  }
  COLLIE_AVX512_INLINE static __m512i pack(Vec v) {
    return _mm512_or_si512(shift_down(rounded(v.even)),
                           _mm512_and_si512(rounded(v.odd), top_halves()));
  }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p) { return split(_mm512_loadu_si512(p)); }
  COLLIE_AVX512_INLINE static Vec load(const Elem* p, Mask m) {
    return split(_mm512_maskz_loadu_epi16(m, p));
  }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v) { _mm512_storeu_si512(p, pack(v)); }
  COLLIE_AVX512_INLINE static void store(Elem* p, Vec v, Mask m) {
    _mm512_mask_storeu_epi16(p, m, pack(v));
  }
  template <ReduceOp Op>
  COLLIE_AVX512_INLINE static Vec apply(Vec acc, Vec x) {
    return {apply16<Op>(acc.even, x.even), apply16<Op>(acc.odd, x.odd)};
  }
};

// Each element folded over the sources in order, as the portable kernels do, a
// vector at a time (two sources two vectors at a time), the last partial
// vector masked. Returns count. (reduce_kernels_avx2.cc's loop with the
// masked tail: one template for both cannot be, since a function without the
// target attribute may not inline the vector types' functions.)
template <typename V, ReduceOp Op>
COLLIE_AVX512 size_t reduce_vectors(typename V::Elem* dst, const typename V::Elem* const* srcs,
                                    size_t nsrc, size_t count) {
  constexpr size_t kLanes = V::kLanes;
  size_t i = 0;
  if (nsrc == 2) {  // two ranks, and every two-shot slice
    const typename V::Elem* a = srcs[0];
    const typename V::Elem* b = srcs[1];
    for (; i + 2 * kLanes <= count; i += 2 * kLanes) {
      const typename V::Vec lo = V::template apply<Op>(V::load(a + i), V::load(b + i));
      const typename V::Vec hi =
          V::template apply<Op>(V::load(a + i + kLanes), V::load(b + i + kLanes));
      V::store(dst + i, lo);
      V::store(dst + i + kLanes, hi);
    }
  }
  for (; i + kLanes <= count; i += kLanes) {
    // Every source is read before dst is written: dst may be one of them.
    typename V::Vec acc = V::load(srcs[0] + i);
    for (size_t k = 1; k < nsrc; ++k) acc = V::template apply<Op>(acc, V::load(srcs[k] + i));
    V::store(dst + i, acc);
  }
  if (i < count) {
    const auto tail = static_cast<typename V::Mask>((uint64_t{1} << (count - i)) - 1);
    typename V::Vec acc = V::load(srcs[0] + i, tail);
    for (size_t k = 1; k < nsrc; ++k) {
      acc = V::template apply<Op>(acc, V::load(srcs[k] + i, tail));
    }
    V::store(dst + i, acc, tail);
  }
  return count;
}

template <typename V>
size_t reduce_as(void* dst, const void* const* srcs, size_t nsrc, size_t count, ReduceOp op) {
  const TypedSources<typename V::Elem> typed(srcs, nsrc);
  return for_reduce_op(op, [&](auto o) {
    return reduce_vectors<V, decltype(o)::value>(static_cast<typename V::Elem*>(dst), typed.get(),
                                                 nsrc, count);
  });
}

// The vectors of the 32- and 64-bit types (for_wide_dtype).
struct WideVectors {
  using Float32 = Float32x16;
  using Float64 = Float64x8;
  using Int32 = Int32x16;
  using Int64 = Int64x8;
};

// CPUID leaf 7 (EBX) and XGETBV directly, as reduce_kernels_avx2.cc does.
bool cpu_runs_avx512() {
  if (!avx2_kernels_available()) return false;  // AVX2, F16C and the YMM state
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const unsigned needed = bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL;
  if ((ebx & needed) != needed) return false;
  // The operating system must save the mask and ZMM registers too (XCR0 bits
  // 5-7), besides SSE and AVX state (bits 1-2).
  unsigned xcr0 = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
  return (xcr0 & 0xE6u) == 0xE6u;
}

}  // namespace

bool avx512_kernels_available() {
  static const bool available = cpu_runs_avx512();
  return available;
}

size_t reduce_16bit_floats_avx512(void* dst, const void* const* srcs, int nsrc, size_t count,
                                  DType dtype, ReduceOp op) {
  if (nsrc < 1) return 0;
  const size_t n = static_cast<size_t>(nsrc);
  switch (dtype) {
    case DType::Float16:
      return reduce_as<Float16x16>(dst, srcs, n, count, op);
    case DType::BFloat16:
      return reduce_as<BFloat16x32>(dst, srcs, n, count, op);
    default:
      return 0;
  }
}

size_t reduce_wide_avx512(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
                          ReduceOp op) {
  if (nsrc < 1) return 0;
  const size_t n = static_cast<size_t>(nsrc);
  return for_wide_dtype<WideVectors>(
      dtype, [&](auto v) { return reduce_as<decltype(v)>(dst, srcs, n, count, op); });
}

#else  // not x86-64: the portable kernels do everything

bool avx512_kernels_available() { return false; }

size_t reduce_16bit_floats_avx512(void*, const void* const*, int, size_t, DType, ReduceOp) {
  return 0;
}

size_t reduce_wide_avx512(void*, const void* const*, int, size_t, DType, ReduceOp) { return 0; }

#endif

}  // namespace collie::detail
