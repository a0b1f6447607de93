// reduce_n against a plain element-by-element reference, for every dtype and op,
// plus the cases where the semantics matter: wrapping, bool bytes, accumulation
// order, float16/bfloat16 rounding once, NaN, and dst aliasing a source.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "collie/errors.h"
#include "core/cpu_id.h"
#include "core/reduce_kernels.h"
#include "core/reduce_kernels_avx2.h"
#include "core/reduce_kernels_avx512.h"

namespace collie {
namespace {

using detail::reduce_n;
using detail::ReduceKernels;

// Bytes of `count` elements of `dtype` for source `k`: small values (exact in
// every type) that differ per element and per source; bool bytes 0, 1 and 2.
std::vector<uint8_t> make_source(DType dtype, size_t count, int k) {
  std::vector<uint8_t> bytes(count * element_size(dtype));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      const int v = static_cast<int>((i * 7 + static_cast<size_t>(k) * 3) % 11);
      T value;
      if constexpr (std::is_same_v<T, bool>) {
        const uint8_t byte = static_cast<uint8_t>(v % 3);
        std::memcpy(&bytes[i], &byte, 1);
        continue;
      } else if constexpr (std::is_unsigned_v<T>) {
        value = static_cast<T>(v);
      } else if constexpr (std::is_integral_v<T>) {
        value = static_cast<T>(v - 5);
      } else {
        value = T(static_cast<float>(v - 5) * 0.375f);
      }
      std::memcpy(&bytes[i * sizeof(T)], &value, sizeof(T));
    }
  });
  return bytes;
}

template <typename A>
A apply(ReduceOp op, A a, A b) {
  switch (op) {
    case ReduceOp::SUM: return static_cast<A>(a + b);
    case ReduceOp::PROD: return static_cast<A>(a * b);
    case ReduceOp::MIN: return std::min(a, b);
    case ReduceOp::MAX: return std::max(a, b);
  }
  return a;
}

// The expected result, one element at a time: integers in int64 then wrapped,
// 16-bit floats accumulated in float and rounded once, bools as or / and.
std::vector<uint8_t> reference(DType dtype, ReduceOp op,
                               const std::vector<std::vector<uint8_t>>& srcs, size_t count) {
  std::vector<uint8_t> out(count * element_size(dtype));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      auto load = [&](size_t k) {
        T v;
        std::memcpy(&v, &srcs[k][i * sizeof(T)], sizeof(T));
        return v;
      };
      if constexpr (std::is_same_v<T, bool>) {
        const bool is_or = op == ReduceOp::SUM || op == ReduceOp::MAX;
        bool acc = srcs[0][i] != 0;
        for (size_t k = 1; k < srcs.size(); ++k)
          acc = is_or ? (acc || srcs[k][i]) : (acc && srcs[k][i]);
        out[i] = acc ? 1 : 0;
      } else if constexpr (std::is_integral_v<T>) {
        int64_t acc = load(0);
        for (size_t k = 1; k < srcs.size(); ++k) acc = apply<int64_t>(op, acc, load(k));
        const T result = static_cast<T>(acc);
        std::memcpy(&out[i * sizeof(T)], &result, sizeof(T));
      } else {
        using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
        Acc acc = static_cast<Acc>(load(0));
        for (size_t k = 1; k < srcs.size(); ++k)
          acc = apply<Acc>(op, acc, static_cast<Acc>(load(k)));
        const T result = T(acc);
        std::memcpy(&out[i * sizeof(T)], &result, sizeof(T));
      }
    }
  });
  return out;
}

std::vector<const void*> pointers(const std::vector<std::vector<uint8_t>>& srcs) {
  std::vector<const void*> ptrs;
  for (const auto& s : srcs) ptrs.push_back(s.data());
  return ptrs;
}

std::string param_name(DType dtype, ReduceOp op) {
  const char* ops[] = {"sum", "prod", "min", "max"};
  return std::string(dtype_name(dtype)) + "_" + ops[static_cast<int>(op)];
}

class ReduceTest : public ::testing::TestWithParam<std::tuple<DType, ReduceOp>> {};

TEST_P(ReduceTest, MatchesReferenceForEverySourceCountAndLength) {
  const auto [dtype, op] = GetParam();
  for (int nsrc : {1, 2, 3, 5}) {
    // Around the 256-element block: empty, one, block - 1, block, block + 1, many.
    for (size_t count : {0, 1, 2, 15, 16, 17, 255, 256, 257, 1000}) {
      SCOPED_TRACE("nsrc=" + std::to_string(nsrc) + " count=" + std::to_string(count));
      std::vector<std::vector<uint8_t>> srcs;
      for (int k = 0; k < nsrc; ++k) srcs.push_back(make_source(dtype, count, k));
      std::vector<uint8_t> dst(count * element_size(dtype), 0xAB);
      reduce_n(dst.data(), pointers(srcs).data(), nsrc, count, dtype, op);
      ASSERT_EQ(dst, reference(dtype, op, srcs, count));
    }
  }
}

TEST_P(ReduceTest, DstMayBeAnySource) {
  const auto [dtype, op] = GetParam();
  for (size_t count : {5, 600}) {  // the plain loop for a few elements, and the blocks
    for (int nsrc : {1, 2, 3}) {
      for (int alias = 0; alias < nsrc; ++alias) {
        SCOPED_TRACE("count=" + std::to_string(count) + " nsrc=" + std::to_string(nsrc) +
                     " dst=srcs[" + std::to_string(alias) + "]");
        std::vector<std::vector<uint8_t>> srcs;
        for (int k = 0; k < nsrc; ++k) srcs.push_back(make_source(dtype, count, k));
        const std::vector<uint8_t> expected = reference(dtype, op, srcs, count);
        auto ptrs = pointers(srcs);
        reduce_n(srcs[static_cast<size_t>(alias)].data(), ptrs.data(), nsrc, count, dtype, op);
        ASSERT_EQ(srcs[static_cast<size_t>(alias)], expected);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllDTypesAndOps, ReduceTest,
    ::testing::Combine(::testing::Values(DType::Bool, DType::Int8, DType::UInt8, DType::Int16,
                                         DType::Int32, DType::Int64, DType::Float16,
                                         DType::BFloat16, DType::Float32, DType::Float64),
                       ::testing::Values(ReduceOp::SUM, ReduceOp::PROD, ReduceOp::MIN,
                                         ReduceOp::MAX)),
    [](const auto& info) { return param_name(std::get<0>(info.param), std::get<1>(info.param)); });

// Reduces one element per source.
template <typename T>
T reduce_values(std::vector<T> values, ReduceOp op) {
  std::vector<const void*> ptrs;
  for (const T& v : values) ptrs.push_back(&v);
  T out{};
  reduce_n(&out, ptrs.data(), static_cast<int>(values.size()), 1, dtype_of<T>, op);
  return out;
}

TEST(ReduceSemantics, IntegerSumAndProdWrap) {
  EXPECT_EQ(reduce_values<int8_t>({127, 1}, ReduceOp::SUM), -128);
  EXPECT_EQ(reduce_values<uint8_t>({200, 100}, ReduceOp::SUM), 44);
  EXPECT_EQ(reduce_values<int8_t>({16, 16}, ReduceOp::PROD), 0);
  EXPECT_EQ(reduce_values<int16_t>({-32768, -1}, ReduceOp::PROD), -32768);
  EXPECT_EQ(reduce_values<int32_t>({std::numeric_limits<int32_t>::max(), 1}, ReduceOp::SUM),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(reduce_values<int64_t>({int64_t{1} << 62, 4}, ReduceOp::PROD), 0);
  EXPECT_EQ(reduce_values<int64_t>({std::numeric_limits<int64_t>::min(), -1}, ReduceOp::PROD),
            std::numeric_limits<int64_t>::min());
}

TEST(ReduceSemantics, IntegerMinMaxAreSigned) {
  EXPECT_EQ(reduce_values<int8_t>({-5, 3, -7}, ReduceOp::MIN), -7);
  EXPECT_EQ(reduce_values<int8_t>({-5, 3, -7}, ReduceOp::MAX), 3);
  EXPECT_EQ(reduce_values<uint8_t>({200, 3}, ReduceOp::MAX), 200);
}

TEST(ReduceSemantics, BoolIsOrAndWithAnyNonzeroByteTrue) {
  auto run = [](std::vector<uint8_t> bytes, ReduceOp op) {
    std::vector<const void*> ptrs;
    for (const uint8_t& b : bytes) ptrs.push_back(&b);
    uint8_t out = 0xAB;
    reduce_n(&out, ptrs.data(), static_cast<int>(bytes.size()), 1, DType::Bool, op);
    return static_cast<int>(out);
  };
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::MAX}) {
    EXPECT_EQ(run({0, 2}, op), 1);
    EXPECT_EQ(run({0, 0}, op), 0);
  }
  for (ReduceOp op : {ReduceOp::PROD, ReduceOp::MIN}) {
    EXPECT_EQ(run({2, 255}, op), 1);
    EXPECT_EQ(run({2, 0}, op), 0);
  }
  EXPECT_EQ(run({7}, ReduceOp::SUM), 1);  // one source is normalised too
}

TEST(ReduceSemantics, FloatAccumulatesInSourceOrder) {
  // 1e8f + 1 rounds back to 1e8f: each order gives another answer.
  EXPECT_EQ(reduce_values<float>({1e8f, 1.f, -1e8f}, ReduceOp::SUM), 0.f);
  EXPECT_EQ(reduce_values<float>({1e8f, -1e8f, 1.f}, ReduceOp::SUM), 1.f);
  EXPECT_EQ(reduce_values<double>({1e17, 1.0, -1e17}, ReduceOp::SUM), 0.0);
  EXPECT_EQ(reduce_values<double>({1e17, -1e17, 1.0}, ReduceOp::SUM), 1.0);
}

TEST(ReduceSemantics, EveryElementAccumulatesInSourceOrder) {
  // Five sources over several blocks: only the order 0, 1, 2, 3, 4 gives 0 (the 1
  // is absorbed by 1e8); adding source 3 before source 2 would give 1.
  const size_t count = 600;
  std::vector<std::vector<float>> srcs = {
      std::vector<float>(count, 0.f), std::vector<float>(count, 1e8f),
      std::vector<float>(count, 1.f), std::vector<float>(count, -1e8f),
      std::vector<float>(count, 0.f)};
  std::vector<const void*> ptrs;
  for (const auto& s : srcs) ptrs.push_back(s.data());
  std::vector<float> out(count, -1.f);
  reduce_n(out.data(), ptrs.data(), 5, count, DType::Float32, ReduceOp::SUM);
  EXPECT_EQ(out, std::vector<float>(count, 0.f));
}

TEST(ReduceSemantics, Float16AccumulatesInFloat32AndRoundsOnce) {
  // Rounded after each step, 1 + 2^-11 + 2^-11 would stay 1 (ties to even).
  const Half tiny(0x1p-11f);
  EXPECT_EQ(reduce_values<Half>({Half(1.f), tiny, tiny}, ReduceOp::SUM).bits,
            Half(1.f + 0x1p-10f).bits);
  const BFloat16 small(0x1p-8f);
  EXPECT_EQ(reduce_values<BFloat16>({BFloat16(1.f), small, small}, ReduceOp::SUM).bits,
            BFloat16(1.f + 0x1p-7f).bits);
  // The partial sum 120000 overflows float16 but not the float32 accumulator.
  EXPECT_EQ(static_cast<float>(
                reduce_values<Half>({Half(60000.f), Half(60000.f), Half(-60000.f)}, ReduceOp::SUM)),
            static_cast<float>(Half(60000.f)));
}

TEST(ReduceSemantics, MinMaxPropagateNaN) {
  for (ReduceOp op : {ReduceOp::MIN, ReduceOp::MAX}) {
    EXPECT_TRUE(std::isnan(reduce_values<float>({NAN, 1.f}, op)));
    EXPECT_TRUE(std::isnan(reduce_values<float>({1.f, NAN}, op)));
    EXPECT_TRUE(std::isnan(reduce_values<double>({1.0, NAN, 2.0}, op)));
    EXPECT_TRUE(std::isnan(static_cast<float>(reduce_values<Half>({Half(1.f), Half(NAN)}, op))));
  }
  EXPECT_EQ(reduce_values<float>({2.f, -INFINITY, 1.f}, ReduceOp::MIN), -INFINITY);
}

TEST(ReduceSemantics, FloatSumOfInfinitiesAndNaN) {
  EXPECT_TRUE(std::isnan(reduce_values<float>({INFINITY, -INFINITY}, ReduceOp::SUM)));
  EXPECT_EQ(reduce_values<float>({INFINITY, 1.f}, ReduceOp::SUM), INFINITY);
  EXPECT_TRUE(std::isnan(
      static_cast<float>(reduce_values<BFloat16>({BFloat16(NAN), BFloat16(1.f)}, ReduceOp::SUM))));
}

// The vector kernels (reduce_kernels_avx2.h, reduce_kernels_avx512.h) against
// the portable ones, bit for bit: every set this CPU runs, whichever reduce_n
// chose. Where it runs none, reduce_n is the portable code and there is
// nothing to compare.
std::vector<ReduceKernels> vector_kernels_here() {
  std::vector<ReduceKernels> sets;
  for (ReduceKernels k : {ReduceKernels::kAvx2, ReduceKernels::kAvx512}) {
    if (detail::reduce_kernels_available(k)) sets.push_back(k);
  }
  return sets;
}

// Source k of `count` raw 16-bit values: random bit patterns (every class of
// value: NaNs with payloads, infinities, subnormals, zeros of both signs)
// mixed with the values where rounding and overflow decide.
std::vector<uint16_t> random_bits(DType dtype, size_t count, uint32_t seed) {
  const std::vector<uint16_t> special =
      dtype == DType::Float16
          ? std::vector<uint16_t>{0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x3c01, 0x7bff,
                                  0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd55, 0x1400, 0x0200}
          : std::vector<uint16_t>{0x0000, 0x8000, 0x0001, 0x007f, 0x0080, 0x3f80, 0x3f81, 0x7f7f,
                                  0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffaa, 0x3c00, 0x4000};
  std::vector<uint16_t> v(count);
  uint32_t state = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    const uint16_t bits = static_cast<uint16_t>(state >> 16);
    v[i] = (state & 0x300u) == 0 ? special[bits % special.size()] : bits;
  }
  return v;
}

bool is_nan_bits(DType dtype, uint16_t b) {
  return dtype == DType::Float16 ? (b & 0x7fff) > 0x7c00 : (b & 0x7fff) > 0x7f80;
}

float widen(DType dtype, uint16_t b) {
  return dtype == DType::Float16 ? static_cast<float>(Half::from_bits(b))
                                 : static_cast<float>(BFloat16::from_bits(b));
}

// Whether folding element i over the sources meets a sum or product of two
// NaNs (inputs, or made on the way: inf - inf, 0 * inf). Which payload that
// keeps is the hardware's choice of operand order, which the compiler picks
// for the portable code.
bool meets_two_nans(DType dtype, ReduceOp op, const std::vector<const void*>& srcs, size_t i) {
  if (op != ReduceOp::SUM && op != ReduceOp::PROD) return false;
  float acc = widen(dtype, static_cast<const uint16_t*>(srcs[0])[i]);
  for (size_t k = 1; k < srcs.size(); ++k) {
    const float x = widen(dtype, static_cast<const uint16_t*>(srcs[k])[i]);
    if (std::isnan(acc) && std::isnan(x)) return true;
    acc = op == ReduceOp::SUM ? acc + x : acc * x;
  }
  return false;
}

TEST(VectorKernels, EveryFloat16AndBFloat16ValueRoundTripsAsInThePortableKernels) {
  const std::vector<ReduceKernels> sets = vector_kernels_here();
  if (sets.empty()) GTEST_SKIP() << "this CPU has no AVX2/F16C: nothing to compare";
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (ReduceKernels kernels : sets) {
    for (DType dtype : {DType::Float16, DType::BFloat16}) {
      for (ReduceOp op : {ReduceOp::SUM, ReduceOp::MIN}) {  // one source: a widen and a narrow
        SCOPED_TRACE(std::string(detail::reduce_kernels_name(kernels)) + " " +
                     param_name(dtype, op));
        const void* src[1] = {all.data()};
        std::vector<uint16_t> fast(all.size()), portable(all.size());
        detail::reduce_n_with(kernels, fast.data(), src, 1, all.size(), dtype, op);
        detail::reduce_n_portable(portable.data(), src, 1, all.size(), dtype, op);
        for (size_t i = 0; i < all.size(); ++i) {
          ASSERT_EQ(fast[i], portable[i]) << "input bits 0x" << std::hex << i;
        }
      }
    }
  }
}

TEST(VectorKernels, ReduceRandomAndSpecialValuesAsThePortableKernels) {
  const std::vector<ReduceKernels> sets = vector_kernels_here();
  if (sets.empty()) GTEST_SKIP() << "this CPU has no AVX2/F16C: nothing to compare";
  // Not a multiple of 8, 16 or 32 (AVX2 leaves the rest to the portable code,
  // AVX-512 masks its last vector), and sources at odd element offsets
  // (unaligned loads).
  const size_t count = 20011;
  for (ReduceKernels kernels : sets) {
    for (DType dtype : {DType::Float16, DType::BFloat16}) {
      for (ReduceOp op : {ReduceOp::SUM, ReduceOp::PROD, ReduceOp::MIN, ReduceOp::MAX}) {
        for (int nsrc : {2, 3, 5, 17}) {
          SCOPED_TRACE(std::string(detail::reduce_kernels_name(kernels)) + " " +
                       param_name(dtype, op) + " nsrc=" + std::to_string(nsrc));
          std::vector<std::vector<uint16_t>> srcs;
          std::vector<const void*> ptrs;
          for (int k = 0; k < nsrc; ++k) {
            srcs.push_back(random_bits(dtype, count + 1, static_cast<uint32_t>(k + 7 * nsrc)));
          }
          for (int k = 0; k < nsrc; ++k)
            ptrs.push_back(srcs[static_cast<size_t>(k)].data() + k % 2);
          std::vector<uint16_t> fast(count), portable(count);
          detail::reduce_n_with(kernels, fast.data(), ptrs.data(), nsrc, count, dtype, op);
          detail::reduce_n_portable(portable.data(), ptrs.data(), nsrc, count, dtype, op);
          for (size_t i = 0; i < count; ++i) {
            if (fast[i] == portable[i]) continue;
            ASSERT_TRUE(meets_two_nans(dtype, op, ptrs, i) && is_nan_bits(dtype, fast[i]) &&
                        is_nan_bits(dtype, portable[i]))
                << "element " << i << ": 0x" << std::hex << fast[i] << " against 0x" << portable[i];
          }
        }
      }
    }
  }
}

// float32 and float64 (reduce_wide_avx2): random bit patterns mixed with NaNs
// with payloads, infinities, zeros of both signs, subnormals; int32 and int64:
// random bit patterns mixed with the extremes, whose sums and products wrap.
template <typename T>
std::vector<T> special_wide() {
  if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    return {T(0), T(1), T(-1), T(2), T(-3), L::max(), L::min(), T(L::max() - 1), T(L::min() + 1)};
  } else {
    return {T(0),
            -T(0),
            std::numeric_limits<T>::infinity(),
            -std::numeric_limits<T>::infinity(),
            std::numeric_limits<T>::quiet_NaN(),
            -std::numeric_limits<T>::quiet_NaN(),
            std::numeric_limits<T>::denorm_min(),
            std::numeric_limits<T>::max(),
            std::numeric_limits<T>::lowest(),
            T(1),
            T(-2.5)};
  }
}

template <typename T>
std::vector<T> random_wide(size_t count, uint32_t seed) {
  const std::vector<T> special = special_wide<T>();
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::vector<T> v(count);
  uint64_t state = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    if ((state >> 60) == 0) {
      v[i] = special[(state >> 32) % special.size()];
    } else {
      const auto bits = static_cast<Bits>(sizeof(T) == 4 ? state >> 32 : state ^ (state >> 29));
      std::memcpy(&v[i], &bits, sizeof(T));
    }
  }
  return v;
}

// Whether a float sum or product at element i meets two NaNs (whose payload
// either kernel may keep); never for integers.
template <typename T>
bool wide_meets_two_nans(ReduceOp op, const std::vector<const void*>& srcs, size_t i) {
  if constexpr (std::is_integral_v<T>) return false;
  if (op != ReduceOp::SUM && op != ReduceOp::PROD) return false;
  T acc = static_cast<const T*>(srcs[0])[i];
  for (size_t k = 1; k < srcs.size(); ++k) {
    const T x = static_cast<const T*>(srcs[k])[i];
    if (std::isnan(acc) && std::isnan(x)) return true;
    acc = op == ReduceOp::SUM ? acc + x : acc * x;
  }
  return false;
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return std::isnan(v);
  }
}

template <typename T>
void expect_wide_as_portable(ReduceKernels kernels, DType dtype) {
  SCOPED_TRACE(detail::reduce_kernels_name(kernels));
  // Counts around the vector and two-vector steps (AVX2: 4 and 8 lanes,
  // AVX-512: 8 and 16) and a long one, sources at odd element offsets
  // (unaligned loads), dst also one of the sources.
  for (size_t count : {size_t{7}, size_t{17}, size_t{31}, size_t{33}, size_t{20011}}) {
    for (ReduceOp op : {ReduceOp::SUM, ReduceOp::PROD, ReduceOp::MIN, ReduceOp::MAX}) {
      for (int nsrc : {1, 2, 3, 5, 17}) {
        SCOPED_TRACE(param_name(dtype, op) + " nsrc=" + std::to_string(nsrc) +
                     " count=" + std::to_string(count));
        std::vector<std::vector<T>> srcs;
        std::vector<const void*> ptrs;
        for (int k = 0; k < nsrc; ++k) {
          srcs.push_back(random_wide<T>(count + 1, static_cast<uint32_t>(k + 7 * nsrc)));
        }
        for (int k = 0; k < nsrc; ++k) ptrs.push_back(srcs[static_cast<size_t>(k)].data() + k % 2);
        std::vector<T> fast(count), portable(count);
        detail::reduce_n_with(kernels, fast.data(), ptrs.data(), nsrc, count, dtype, op);
        detail::reduce_n_portable(portable.data(), ptrs.data(), nsrc, count, dtype, op);
        for (size_t i = 0; i < count; ++i) {
          if (std::memcmp(&fast[i], &portable[i], sizeof(T)) == 0) continue;
          ASSERT_TRUE(wide_meets_two_nans<T>(op, ptrs, i) && is_nan(fast[i]) && is_nan(portable[i]))
              << "element " << i << ": " << fast[i] << " against " << portable[i];
        }
        // In place: dst is the first source (as two-shot slices reduce).
        std::vector<T> in_place(srcs[0].begin(),
                                srcs[0].begin() + static_cast<std::ptrdiff_t>(count));
        std::vector<const void*> with_dst = ptrs;
        with_dst[0] = in_place.data();
        std::vector<T> expected(count);
        detail::reduce_n_portable(expected.data(), with_dst.data(), nsrc, count, dtype, op);
        detail::reduce_n_with(kernels, in_place.data(), with_dst.data(), nsrc, count, dtype, op);
        for (size_t i = 0; i < count; ++i) {
          if (std::memcmp(&in_place[i], &expected[i], sizeof(T)) == 0) continue;
          ASSERT_TRUE(is_nan(in_place[i]) && is_nan(expected[i]))
              << "in place, element " << i << ": " << in_place[i] << " against " << expected[i];
        }
      }
    }
  }
}

TEST(VectorKernels, Float32AndFloat64ReduceAsThePortableKernels) {
  const std::vector<ReduceKernels> sets = vector_kernels_here();
  if (sets.empty()) GTEST_SKIP() << "this CPU has no AVX2: nothing to compare";
  for (ReduceKernels kernels : sets) {
    expect_wide_as_portable<float>(kernels, DType::Float32);
    expect_wide_as_portable<double>(kernels, DType::Float64);
  }
}

TEST(VectorKernels, Int32AndInt64ReduceAsThePortableKernels) {
  const std::vector<ReduceKernels> sets = vector_kernels_here();
  if (sets.empty()) GTEST_SKIP() << "this CPU has no AVX2: nothing to compare";
  for (ReduceKernels kernels : sets) {
    expect_wide_as_portable<int32_t>(kernels, DType::Int32);
    expect_wide_as_portable<int64_t>(kernels, DType::Int64);
  }
}

// reduce_n runs the set the process chose, one this CPU runs: without
// COLLIE_REDUCE_KERNELS (the CLI tests set it), AVX-512 where the CPU prefers
// it, else AVX2 where it has it.
TEST(VectorKernels, ReduceNRunsTheChosenSet) {
  const ReduceKernels chosen = detail::reduce_kernels_in_use();
  EXPECT_TRUE(detail::reduce_kernels_available(chosen));
  if (std::getenv("COLLIE_REDUCE_KERNELS") == nullptr) {
    const bool avx512 =
        detail::avx512_kernels_available() &&
        detail::avx512_kernels_preferred_for_cpu(detail::cpu_vendor(), detail::cpu_family());
    const ReduceKernels expected = avx512                             ? ReduceKernels::kAvx512
                                   : detail::avx2_kernels_available() ? ReduceKernels::kAvx2
                                                                      : ReduceKernels::kPortable;
    EXPECT_EQ(chosen, expected);
  }
  // Bit for bit what reduce_n_with gives with that set (bfloat16, 3 sources:
  // MAX, whose NaNs are the first source's in either set).
  std::vector<std::vector<uint16_t>> srcs;
  for (uint32_t k = 0; k < 3; ++k) srcs.push_back(random_bits(DType::BFloat16, 1000, k));
  const void* ptrs[3] = {srcs[0].data(), srcs[1].data(), srcs[2].data()};
  std::vector<uint16_t> via_reduce_n(1000), via_with(1000);
  reduce_n(via_reduce_n.data(), ptrs, 3, 1000, DType::BFloat16, ReduceOp::MAX);
  detail::reduce_n_with(chosen, via_with.data(), ptrs, 3, 1000, DType::BFloat16, ReduceOp::MAX);
  EXPECT_EQ(via_reduce_n, via_with);
}

TEST(VectorKernels, AvxFiveTwelveIsPreferredOnZenFiveAndLater) {
  EXPECT_TRUE(detail::avx512_kernels_preferred_for_cpu("AuthenticAMD", 0x1A));
  EXPECT_TRUE(detail::avx512_kernels_preferred_for_cpu("AuthenticAMD", 0x1B));
  EXPECT_FALSE(detail::avx512_kernels_preferred_for_cpu("AuthenticAMD", 0x19));  // Zen 3, Zen 4
  EXPECT_FALSE(detail::avx512_kernels_preferred_for_cpu("GenuineIntel", 6));
  EXPECT_FALSE(detail::avx512_kernels_preferred_for_cpu("", 0));
}

TEST(VectorKernels, NamesAreTheEnvironmentVariablesValues) {
  EXPECT_STREQ(detail::reduce_kernels_name(ReduceKernels::kPortable), "portable");
  EXPECT_STREQ(detail::reduce_kernels_name(ReduceKernels::kAvx2), "avx2");
  EXPECT_STREQ(detail::reduce_kernels_name(ReduceKernels::kAvx512), "avx512");
}

// A set the CPU cannot run is a ValueError, never a SIGILL; the portable one
// runs everywhere.
TEST(VectorKernels, ReduceNWithASetThisCpuLacksThrows) {
  const float a[20] = {1, 2, 3}, b[20] = {4, 5, 6};
  const void* srcs[2] = {a, b};
  float out[20] = {};
  for (ReduceKernels k : {ReduceKernels::kPortable, ReduceKernels::kAvx2, ReduceKernels::kAvx512}) {
    SCOPED_TRACE(detail::reduce_kernels_name(k));
    if (detail::reduce_kernels_available(k)) {
      detail::reduce_n_with(k, out, srcs, 2, 20, DType::Float32, ReduceOp::SUM);
      EXPECT_EQ(out[0], 5.f);
      EXPECT_EQ(out[2], 9.f);
      EXPECT_EQ(out[19], 0.f);
    } else {
      EXPECT_THROW(detail::reduce_n_with(k, out, srcs, 2, 20, DType::Float32, ReduceOp::SUM),
                   ValueError);
    }
  }
  EXPECT_TRUE(detail::reduce_kernels_available(ReduceKernels::kPortable));
}

TEST(ReduceSemantics, RejectsNoSources) {
  float out = 0;
  EXPECT_THROW(reduce_n(&out, nullptr, 0, 1, DType::Float32, ReduceOp::SUM), ValueError);
}

}  // namespace
}  // namespace collie
