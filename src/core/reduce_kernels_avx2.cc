// float16, bfloat16, float32, float64, int32 and int64 reductions with AVX2
// (see reduce_kernels_avx2.h).
#include "core/reduce_kernels_avx2.h"

#include <cstdint>

#include "core/reduce_kernel_support.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COLLIE_HAVE_AVX2_KERNELS 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace collie::detail {

#if COLLIE_HAVE_AVX2_KERNELS

namespace {

// Everything below runs only where avx2_kernels_available() said so. The
// helpers are forced inline into the loops, which carry the target attribute.
#define COLLIE_AVX2 __attribute__((target("avx2,f16c")))
#define COLLIE_AVX2_INLINE __attribute__((target("avx2,f16c"), always_inline)) inline

// acc op x, as the portable SumOp/ProdOp/MinOp/MaxOp: MIN and MAX keep `acc`
// where it is NaN, so NaN propagates.
template <ReduceOp Op>
COLLIE_AVX2_INLINE __m256 apply8(__m256 acc, __m256 x) {
  if constexpr (Op == ReduceOp::SUM) {
    return _mm256_add_ps(acc, x);
  } else if constexpr (Op == ReduceOp::PROD) {
    return _mm256_mul_ps(acc, x);
  } else {
    const __m256 keep =
        _mm256_or_ps(_mm256_cmp_ps(acc, x, Op == ReduceOp::MIN ? _CMP_LT_OQ : _CMP_GT_OQ),
                     _mm256_cmp_ps(acc, acc, _CMP_UNORD_Q));
    return _mm256_blendv_ps(x, acc, keep);
  }
}

// float16: F16C widens eight elements exactly and narrows eight rounding to
// nearest even, which is what half_bits_to_float and float_to_half_bits
// (core/float16.h) do one at a time, NaN (quieted, top of the payload kept) and
// overflow to infinity included.
COLLIE_AVX2_INLINE __m256 load_half8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

COLLIE_AVX2_INLINE void store_half8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

template <ReduceOp Op>
COLLIE_AVX2 size_t reduce_half(uint16_t* dst, const uint16_t* const* srcs, size_t nsrc,
                               size_t count) {
  size_t i = 0;
  if (nsrc == 2) {  // two ranks, and every two-shot slice: sixteen at a time
    const uint16_t* a = srcs[0];
    const uint16_t* b = srcs[1];
    for (; i + 16 <= count; i += 16) {
      const __m256 lo = apply8<Op>(load_half8(a + i), load_half8(b + i));
      const __m256 hi = apply8<Op>(load_half8(a + i + 8), load_half8(b + i + 8));
      store_half8(dst + i, lo);
      store_half8(dst + i + 8, hi);
    }
  }
  for (; i + 8 <= count; i += 8) {
    // Every source is read before dst is written: dst may be one of them.
    __m256 acc = load_half8(srcs[0] + i);
    for (size_t k = 1; k < nsrc; ++k) acc = apply8<Op>(acc, load_half8(srcs[k] + i));
    store_half8(dst + i, acc);
  }
  return i;
}

// bfloat16 is float32's top half, so sixteen elements in a vector of 32-bit
// lanes widen without shuffles: the even ones shifted up, the odd ones masked.
// (Converting eight at a time takes shuffles, which one port runs: 2 sources in
// L2, 0.20 against 0.16 ns per element; 0.12 with the NaN blends skipped.)
COLLIE_AVX2_INLINE __m256 even_elements(__m256i v) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

COLLIE_AVX2_INLINE __m256 odd_elements(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

// float_to_bfloat16_bits (core/float16.h) on eight floats, the result in each
// lane's top half: round to nearest even (overflow carries into infinity).
COLLIE_AVX2_INLINE __m256i round_to_top_half(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
}

// Where `v` is NaN, `rounded` becomes a quiet NaN that keeps the top of v's
// payload, as float_to_bfloat16_bits makes it.
COLLIE_AVX2_INLINE __m256i keep_nan(__m256i rounded, __m256 v, __m256 is_nan) {
  const __m256i quiet_nan = _mm256_or_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x00400000));
  return _mm256_blendv_epi8(rounded, quiet_nan, _mm256_castps_si256(is_nan));
}

COLLIE_AVX2_INLINE void store_bf16x16(uint16_t* p, __m256 even, __m256 odd) {
  __m256i even_bits = round_to_top_half(even);
  __m256i odd_bits = round_to_top_half(odd);
  const __m256 even_nan = _mm256_cmp_ps(even, even, _CMP_UNORD_Q);
  const __m256 odd_nan = _mm256_cmp_ps(odd, odd, _CMP_UNORD_Q);
  const __m256 any_nan = _mm256_or_ps(even_nan, odd_nan);
  if (!_mm256_testz_ps(any_nan, any_nan)) {  // rare: skipped, the blends cost a third
    even_bits = keep_nan(even_bits, even, even_nan);
    odd_bits = keep_nan(odd_bits, odd, odd_nan);
  }
  const __m256i top = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const __m256i packed =
      _mm256_or_si256(_mm256_srli_epi32(even_bits, 16), _mm256_and_si256(odd_bits, top));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
}

COLLIE_AVX2_INLINE __m256i load16(const uint16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

template <ReduceOp Op>
COLLIE_AVX2 size_t reduce_bfloat16(uint16_t* dst, const uint16_t* const* srcs, size_t nsrc,
                                   size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i first = load16(srcs[0] + i);
    __m256 even = even_elements(first);
    __m256 odd = odd_elements(first);
    for (size_t k = 1; k < nsrc; ++k) {
      const __m256i next = load16(srcs[k] + i);
      even = apply8<Op>(even, even_elements(next));
      odd = apply8<Op>(odd, odd_elements(next));
    }
    store_bf16x16(dst + i, even, odd);
  }
  return i;
}

// float64's apply8: acc op x on four doubles.
template <ReduceOp Op>
COLLIE_AVX2_INLINE __m256d apply4(__m256d acc, __m256d x) {
  if constexpr (Op == ReduceOp::SUM) {
    return _mm256_add_pd(acc, x);
  } else if constexpr (Op == ReduceOp::PROD) {
    return _mm256_mul_pd(acc, x);
  } else {
    const __m256d keep =
        _mm256_or_pd(_mm256_cmp_pd(acc, x, Op == ReduceOp::MIN ? _CMP_LT_OQ : _CMP_GT_OQ),
                     _mm256_cmp_pd(acc, acc, _CMP_UNORD_Q));
    return _mm256_blendv_pd(x, acc, keep);
  }
}

// One vector of float32 or float64: its loads, stores and apply.
struct Float32x8 {
  using Elem = float;
  using Vec = __m256;
  static constexpr size_t kLanes = 8;
  COLLIE_AVX2_INLINE static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  COLLIE_AVX2_INLINE static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  template <ReduceOp Op>
  COLLIE_AVX2_INLINE static Vec apply(Vec acc, Vec x) {
    return apply8<Op>(acc, x);
  }
};

struct Float64x4 {
  using Elem = double;
  using Vec = __m256d;
  static constexpr size_t kLanes = 4;
  COLLIE_AVX2_INLINE static Vec load(const double* p) { return _mm256_loadu_pd(p); }
  COLLIE_AVX2_INLINE static void store(double* p, Vec v) { _mm256_storeu_pd(p, v); }
  template <ReduceOp Op>
  COLLIE_AVX2_INLINE static Vec apply(Vec acc, Vec x) {
    return apply4<Op>(acc, x);
  }
};

// One vector of int32 or int64: its loads and stores. Integers wrap, as the
// portable kernels' unsigned arithmetic does.
template <typename T>
struct IntVector {
  using Elem = T;
  using Vec = __m256i;
  static constexpr size_t kLanes = sizeof(Vec) / sizeof(T);
  COLLIE_AVX2_INLINE static Vec load(const T* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  COLLIE_AVX2_INLINE static void store(T* p, Vec v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
};

struct Int32x8 : IntVector<int32_t> {
  template <ReduceOp Op>
  COLLIE_AVX2_INLINE static Vec apply(Vec acc, Vec x) {
    if constexpr (Op == ReduceOp::SUM) {
      return _mm256_add_epi32(acc, x);
    } else if constexpr (Op == ReduceOp::PROD) {
      return _mm256_mullo_epi32(acc, x);  // the low 32 bits of the product
    } else if constexpr (Op == ReduceOp::MIN) {
      return _mm256_min_epi32(acc, x);
    } else {
      return _mm256_max_epi32(acc, x);
    }
  }
};

struct Int64x4 : IntVector<int64_t> {
  template <ReduceOp Op>
  COLLIE_AVX2_INLINE static Vec apply(Vec acc, Vec x) {
    if constexpr (Op == ReduceOp::SUM) {
      return _mm256_add_epi64(acc, x);
    } else if constexpr (Op == ReduceOp::PROD) {
      // AVX2 has no 64-bit multiply: mod 2^64, a * b = lo(a) lo(b) +
      // ((hi(a) lo(b) + lo(a) hi(b)) << 32), each product of 32-bit halves exact.
      const __m256i low = _mm256_mul_epu32(acc, x);
      const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(acc, 32), x),
                                             _mm256_mul_epu32(acc, _mm256_srli_epi64(x, 32)));
      return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
    } else {
      // No 64-bit min/max either: keep acc where it wins (ties keep x, the same value).
      const __m256i acc_wins =
          Op == ReduceOp::MIN ? _mm256_cmpgt_epi64(x, acc) : _mm256_cmpgt_epi64(acc, x);
      return _mm256_blendv_epi8(x, acc, acc_wins);
    }
  }
};

// Each element folded over the sources in order, as the portable kernels do,
// a vector at a time; two sources two vectors at a time.
template <typename V, ReduceOp Op>
COLLIE_AVX2 size_t reduce_wide(typename V::Elem* dst, const typename V::Elem* const* srcs,
                               size_t nsrc, size_t count) {
  constexpr size_t kLanes = V::kLanes;
  size_t i = 0;
  if (nsrc == 2) {
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
  return i;
}

template <typename V>
size_t reduce_wide_op(typename V::Elem* dst, const void* const* srcs, size_t nsrc, size_t count,
                      ReduceOp op) {
  const TypedSources<typename V::Elem> typed(srcs, nsrc);
  return for_reduce_op(op, [&](auto o) {
    return reduce_wide<V, decltype(o)::value>(dst, typed.get(), nsrc, count);
  });
}

// The vectors of the 32- and 64-bit types (for_wide_dtype).
struct WideVectors {
  using Float32 = Float32x8;
  using Float64 = Float64x4;
  using Int32 = Int32x8;
  using Int64 = Int64x4;
};

}  // namespace

// CPUID and XGETBV directly: clang's __builtin_cpu_supports knows no "f16c".
bool cpu_has_avx2_and_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((ecx & bit_F16C) == 0 || (ecx & bit_AVX) == 0 || (ecx & bit_OSXSAVE) == 0) return false;
  // The operating system must save the YMM registers (XCR0 bits 1 and 2).
  unsigned xcr0 = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
  if ((xcr0 & 0x6u) != 0x6u) return false;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ebx & bit_AVX2) != 0;
}

bool avx2_kernels_available() {
  static const bool available = cpu_has_avx2_and_f16c();
  return available;
}

size_t reduce_16bit_floats_avx2(void* dst, const void* const* srcs, int nsrc, size_t count,
                                DType dtype, ReduceOp op) {
  if (nsrc < 1 || (dtype != DType::Float16 && dtype != DType::BFloat16)) return 0;
  auto* out = static_cast<uint16_t*>(dst);
  // The 16-bit elements are read as raw bits.
  const size_t n = static_cast<size_t>(nsrc);
  const TypedSources<uint16_t> typed(srcs, n);
  const bool half = dtype == DType::Float16;
  return for_reduce_op(op, [&](auto o) {
    constexpr ReduceOp kOp = decltype(o)::value;
    return half ? reduce_half<kOp>(out, typed.get(), n, count)
                : reduce_bfloat16<kOp>(out, typed.get(), n, count);
  });
}

size_t reduce_wide_avx2(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
                        ReduceOp op) {
  if (nsrc < 1) return 0;
  const size_t n = static_cast<size_t>(nsrc);
  return for_wide_dtype<WideVectors>(dtype, [&](auto v) {
    using V = decltype(v);
    return reduce_wide_op<V>(static_cast<typename V::Elem*>(dst), srcs, n, count, op);
  });
}

#else  // not x86-64: the portable kernels do everything

bool avx2_kernels_available() { return false; }

size_t reduce_16bit_floats_avx2(void*, const void* const*, int, size_t, DType, ReduceOp) {
  return 0;
}

size_t reduce_wide_avx2(void*, const void* const*, int, size_t, DType, ReduceOp) { return 0; }

#endif

}  // namespace collie::detail
