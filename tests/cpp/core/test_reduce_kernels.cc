// reduce_n against a plain element-by-element reference, for every dtype and op,
// plus the cases where the semantics matter: wrapping, bool bytes, accumulation
// order, float16/bfloat16 rounding once, NaN, and dst aliasing a source.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "collie/errors.h"
#include "core/reduce_kernels.h"

namespace collie {
namespace {

using detail::reduce_n;

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

TEST(ReduceSemantics, RejectsNoSources) {
  float out = 0;
  EXPECT_THROW(reduce_n(&out, nullptr, 0, 1, DType::Float32, ReduceOp::SUM), ValueError);
}

}  // namespace
}  // namespace collie
