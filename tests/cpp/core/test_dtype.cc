// DType metadata and the Half / BFloat16 conversions.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "collie/dtype.h"
#include "collie/errors.h"

namespace collie {
namespace {

struct DTypeInfo {
  DType dtype;
  size_t size;
  const char* name;
  bool floating;
};

class DTypeTest : public ::testing::TestWithParam<DTypeInfo> {};

TEST_P(DTypeTest, ElementSize) { EXPECT_EQ(element_size(GetParam().dtype), GetParam().size); }

// The shared-memory collectives shift by it instead of dividing (chunk_elems in
// src/backends/shm/collectives.cc): a new dtype must keep this.
TEST_P(DTypeTest, ElementSizeIsAPowerOfTwo) {
  EXPECT_TRUE(std::has_single_bit(element_size(GetParam().dtype))) << GetParam().size;
}

TEST_P(DTypeTest, NameRoundTrips) {
  EXPECT_EQ(dtype_name(GetParam().dtype), GetParam().name);
  EXPECT_EQ(parse_dtype(GetParam().name), GetParam().dtype);
}

TEST_P(DTypeTest, IsFloating) { EXPECT_EQ(is_floating(GetParam().dtype), GetParam().floating); }

TEST_P(DTypeTest, DispatchPassesTheMatchingCppType) {
  const DType dispatched =
      dispatch_dtype(GetParam().dtype, [](auto tag) { return dtype_of<decltype(tag)>; });
  EXPECT_EQ(dispatched, GetParam().dtype);
  const size_t size = dispatch_dtype(GetParam().dtype, [](auto tag) { return sizeof(tag); });
  EXPECT_EQ(size, GetParam().size);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, DTypeTest,
                         ::testing::Values(DTypeInfo{DType::Bool, 1, "bool", false},
                                           DTypeInfo{DType::Int8, 1, "int8", false},
                                           DTypeInfo{DType::UInt8, 1, "uint8", false},
                                           DTypeInfo{DType::Int16, 2, "int16", false},
                                           DTypeInfo{DType::Int32, 4, "int32", false},
                                           DTypeInfo{DType::Int64, 8, "int64", false},
                                           DTypeInfo{DType::Float16, 2, "float16", true},
                                           DTypeInfo{DType::BFloat16, 2, "bfloat16", true},
                                           DTypeInfo{DType::Float32, 4, "float32", true},
                                           DTypeInfo{DType::Float64, 8, "float64", true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ParseDType, AcceptsAliases) {
  EXPECT_EQ(parse_dtype("float"), DType::Float32);
  EXPECT_EQ(parse_dtype("double"), DType::Float64);
  EXPECT_EQ(parse_dtype("half"), DType::Float16);
  EXPECT_EQ(parse_dtype("int"), DType::Int32);
  EXPECT_EQ(parse_dtype("long"), DType::Int64);
}

TEST(ParseDType, RejectsUnknownNamesWithValueError) {
  EXPECT_THROW(parse_dtype("float128"), ValueError);
  EXPECT_THROW(parse_dtype(""), ValueError);
  EXPECT_THROW(parse_dtype("Float32"), ValueError);  // names are lower-case
  try {
    parse_dtype("complex64");
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'complex64'"), std::string::npos) << e.what();
  }
}

// ---- Half ----

// IEEE binary16 decoded from its fields, independently of the implementation.
double decode_half(uint16_t bits) {
  const int sign = bits >> 15 ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

bool is_half_nan(uint16_t bits) { return (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0; }

TEST(Half, WidensEveryBitPatternExactly) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float f = Half::from_bits(bits);
    const double expected = decode_half(bits);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(f), expected) << std::hex << b;
      ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << std::hex << b;
    }
  }
}

TEST(Half, EveryBitPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint16_t back = Half(static_cast<float>(Half::from_bits(bits))).bits;
    if (is_half_nan(bits)) {
      ASSERT_TRUE(is_half_nan(back)) << std::hex << b;
      ASSERT_EQ(back & 0x8000, bits & 0x8000) << std::hex << b;
    } else {
      ASSERT_EQ(back, bits) << std::hex << b;
    }
  }
}

// Between each pair of neighbouring finite halves: the midpoint goes to the one
// with an even mantissa, and a hair either side of it goes to the nearer one.
TEST(Half, RoundsToNearestEvenBetweenEveryPairOfNeighbours) {
  for (uint16_t lo = 0; lo < 0x7bff; ++lo) {
    const auto hi = static_cast<uint16_t>(lo + 1);
    const float a = Half::from_bits(lo);
    const float b = Half::from_bits(hi);
    const float mid = (a + b) / 2;  // exact: halves have 11 significant bits
    ASSERT_EQ(static_cast<double>(mid), (decode_half(lo) + decode_half(hi)) / 2);
    const uint16_t even = (lo & 1) == 0 ? lo : hi;
    ASSERT_EQ(Half(mid).bits, even) << std::hex << lo;
    ASSERT_EQ(Half(std::nextafter(mid, 0.f)).bits, lo) << std::hex << lo;
    ASSERT_EQ(Half(std::nextafter(mid, INFINITY)).bits, hi) << std::hex << lo;
    ASSERT_EQ(Half(-mid).bits, even | 0x8000) << std::hex << lo;
  }
}

// The nearest value of `table` (sorted finite non-negative values of a 16-bit
// format with their bit patterns) to |f|, ties to the even pattern.
uint16_t nearest(const std::vector<std::pair<double, uint16_t>>& table, float f) {
  const double x = std::fabs(static_cast<double>(f));
  auto it = std::lower_bound(table.begin(), table.end(), std::make_pair(x, uint16_t{0}));
  uint16_t bits;
  if (it == table.begin()) {
    bits = it->second;
  } else if (it == table.end()) {
    bits = table.back().second;
  } else {
    const auto& below = *(it - 1);
    const double up = it->first - x;
    const double down = x - below.first;
    bits = up < down   ? it->second
           : down < up ? below.second
                       : ((it->second & 1) == 0 ? it->second : below.second);
  }
  return static_cast<uint16_t>(bits | (std::signbit(f) ? 0x8000 : 0));
}

TEST(Half, MatchesAReferenceOnRandomFloats) {
  std::vector<std::pair<double, uint16_t>> table;
  for (uint16_t b = 0; b <= 0x7bff; ++b) table.emplace_back(decode_half(b), b);
  std::mt19937 rng(42);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<uint32_t> in_range(0x33000000u, 0x47800000u);  // 2^-25 .. 2^16
  for (int i = 0; i < 1'000'000; ++i) {
    uint32_t bits = (i % 2 ? any(rng) & 0x80000000u : 0u) | (i % 2 ? in_range(rng) : any(rng));
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    uint16_t expected;
    if (std::fabs(f) >= 65520.f) {
      expected = std::signbit(f) ? 0xfc00 : 0x7c00;  // past max + half an ulp
    } else {
      expected = nearest(table, f);
    }
    ASSERT_EQ(Half(f).bits, expected) << std::hex << bits;
  }
}

TEST(Half, SpecialValues) {
  EXPECT_EQ(Half(0.f).bits, 0x0000);
  EXPECT_EQ(Half(-0.f).bits, 0x8000);
  EXPECT_EQ(Half(1.f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.f).bits, 0xc000);
  EXPECT_EQ(Half(65504.f).bits, 0x7bff);  // largest finite
  EXPECT_EQ(Half(65519.f).bits, 0x7bff);  // just below the rounding boundary
  EXPECT_EQ(Half(65520.f).bits, 0x7c00);  // tie between 65504 and 65536: to inf
  EXPECT_EQ(Half(1e10f).bits, 0x7c00);
  EXPECT_EQ(Half(-INFINITY).bits, 0xfc00);
  EXPECT_EQ(Half(0x1p-14f).bits, 0x0400);         // smallest normal
  EXPECT_EQ(Half(0x1p-24f).bits, 0x0001);         // smallest subnormal
  EXPECT_EQ(Half(0x1p-25f).bits, 0x0000);         // tie: to even (zero)
  EXPECT_EQ(Half(0x1.000002p-25f).bits, 0x0001);  // just above the tie
  EXPECT_EQ(Half(0x3p-25f).bits, 0x0002);         // 1.5 ulps: tie to even
  EXPECT_EQ(Half(0x1p-30f).bits, 0x0000);
  EXPECT_EQ(Half(0x1.ff8p-15f).bits, 0x03ff);  // largest subnormal
  EXPECT_EQ(Half(0x1.ffap-15f).bits, 0x03ff);  // a quarter ulp above it
  EXPECT_EQ(Half(0x1.ffcp-15f).bits, 0x0400);  // tie: up into the normals
  EXPECT_EQ(Half(1.f + 0x1p-10f).bits, 0x3c01);
  EXPECT_EQ(Half(1.f + 0x1p-11f).bits, 0x3c00);  // tie to even
  EXPECT_EQ(Half(1.f + 0x3p-11f).bits, 0x3c02);  // tie to even (up)
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x3555)), 0x1.554p-2f);
}

TEST(Half, NaNStaysNaN) {
  EXPECT_TRUE(is_half_nan(Half(std::nanf("")).bits));
  // A payload only in the low bits would become infinity if merely truncated.
  EXPECT_TRUE(is_half_nan(Half(std::bit_cast<float>(0x7f800001u)).bits));
  EXPECT_TRUE(is_half_nan(Half(std::bit_cast<float>(0xff800001u)).bits));
  EXPECT_EQ(Half(std::bit_cast<float>(0xff800001u)).bits & 0x8000, 0x8000);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half::from_bits(0x7c01))));
  EXPECT_TRUE(std::isinf(static_cast<float>(Half::from_bits(0x7c00))));
}

// ---- BFloat16 ----

TEST(BFloat16, WidensEveryBitPatternExactly) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = BFloat16::from_bits(static_cast<uint16_t>(b));
    ASSERT_EQ(std::bit_cast<uint32_t>(f), b << 16) << std::hex << b;
  }
}

TEST(BFloat16, EveryBitPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint16_t back = BFloat16(static_cast<float>(BFloat16::from_bits(bits))).bits;
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0) {  // NaN: stays NaN, gains the quiet bit
      ASSERT_EQ(back, bits | 0x40) << std::hex << b;
    } else {
      ASSERT_EQ(back, bits) << std::hex << b;
    }
  }
}

TEST(BFloat16, MatchesAReferenceOnRandomFloats) {
  std::vector<std::pair<double, uint16_t>> table;
  for (uint16_t b = 0; b <= 0x7f7f; ++b) {
    table.emplace_back(static_cast<double>(std::bit_cast<float>(uint32_t{b} << 16)), b);
  }
  // Past the largest finite value, by half an ulp or more: infinity.
  const double overflow = std::ldexp(2.0 - std::ldexp(1.0, -8), 127);
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 1'000'000; ++i) {
    const uint32_t bits = any(rng);
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    const uint16_t expected = std::fabs(static_cast<double>(f)) >= overflow
                                  ? static_cast<uint16_t>(std::signbit(f) ? 0xff80 : 0x7f80)
                                  : nearest(table, f);
    ASSERT_EQ(BFloat16(f).bits, expected) << std::hex << bits;
  }
}

TEST(BFloat16, SpecialValues) {
  EXPECT_EQ(BFloat16(1.f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-0.f).bits, 0x8000);
  EXPECT_EQ(BFloat16(1.f + 0x1p-8f).bits, 0x3f80);                      // tie to even (down)
  EXPECT_EQ(BFloat16(1.f + 0x3p-8f).bits, 0x3f82);                      // tie to even (up)
  EXPECT_EQ(BFloat16(1.f + 0x1p-8f + 0x1p-20f).bits, 0x3f81);           // above the tie
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds to inf
  EXPECT_EQ(BFloat16(-INFINITY).bits, 0xff80);
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x00010000u)).bits, 0x0001);  // subnormal, exact
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x00008000u)).bits, 0x0000);  // subnormal tie
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x00018000u)).bits, 0x0002);
  EXPECT_EQ(static_cast<float>(BFloat16(3.14159265f)), 3.140625f);
}

TEST(BFloat16, NaNStaysNaN) {
  // 0x7fffffff would carry into the sign bit, 0x7f800001 truncate to infinity.
  for (uint32_t bits : {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xff800001u}) {
    const uint16_t b = BFloat16(std::bit_cast<float>(bits)).bits;
    EXPECT_EQ(b & 0x7f80, 0x7f80) << std::hex << bits;
    EXPECT_NE(b & 0x7f, 0) << std::hex << bits;
    EXPECT_EQ(b & 0x8000, (bits >> 16) & 0x8000) << std::hex << bits;
  }
}

}  // namespace
}  // namespace collie
