// Bit-level conversions between float and the 16-bit float formats.
//
// Inline and branch-free so that the reduction kernels' block loops, which widen
// and narrow thousands of elements at a time, can be vectorised by the compiler.
// Half and BFloat16 (collie/dtype.h) use these too. All narrowing rounds to
// nearest, ties to even, in the default FP rounding mode.
#pragma once

#include <bit>
#include <cstdint>

namespace collie::detail {

// cond ? a : b, written with masks: with `?:` GCC sinks the float arithmetic
// feeding one arm into a branch, which it may not if-convert under the default
// -ftrapping-math, and the loop is left scalar.
inline uint32_t select_bits(bool cond, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (a & mask) | (b & ~mask);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t mag = h & 0x7fffu;
  // Normal numbers: move exponent and mantissa into place and rebias 15 -> 127
  // (add 112 << 23). Inf/NaN (exponent 31) need exponent 255: rebias twice.
  uint32_t wide = (mag << 13) + 0x38000000u;
  wide = select_bits(mag >= 0x7c00u, wide + 0x38000000u, wide);
  // Subnormals are mantissa * 2^-24, which float represents exactly. (A signed
  // int converts to float in one vector instruction; an unsigned one does not.)
  const float sub = static_cast<float>(static_cast<int32_t>(mag)) * 0x1p-24f;
  const uint32_t bits = select_bits(mag < 0x400u, std::bit_cast<uint32_t>(sub), wide);
  return std::bit_cast<float>(sign | bits);
}

inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t mag = x & 0x7fffffffu;
  // In half's normal range: rebias 127 -> 15 and drop 13 mantissa bits, adding
  // just under half an ulp plus the kept lsb so that ties go to even. A carry
  // out of the mantissa correctly bumps the exponent (up to infinity).
  const uint32_t normal = (mag - 0x38000000u + 0xfffu + ((mag >> 13) & 1u)) >> 13;
  // Below 2^-14 the result is a subnormal: adding 0.5f puts |f| in a binade whose
  // ulp is 2^-24 (half's subnormal step), so the FPU's own rounding yields the
  // subnormal mantissa in the low bits (1024 = the smallest normal, as encoded).
  const float shifted = std::bit_cast<float>(mag) + 0.5f;
  const uint32_t subnormal = std::bit_cast<uint32_t>(shifted) - 0x3f000000u;
  // NaN stays NaN (quiet bit set) and keeps the top of its payload.
  const uint32_t nan = 0x7e00u | ((mag >> 13) & 0x3ffu);
  uint32_t bits = select_bits(mag >= 0x38800000u, normal, subnormal);
  bits = select_bits(mag >= 0x477ff000u, 0x7c00u, bits);  // >= 65520 rounds to infinity
  bits = select_bits(mag > 0x7f800000u, nan, bits);
  return static_cast<uint16_t>(sign | bits);
}

inline float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  // Round the dropped 16 bits to nearest even; overflow carries into infinity.
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  // Rounding could turn a NaN into infinity: keep it a (quiet) NaN instead.
  const uint32_t nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>(select_bits((x & 0x7fffffffu) > 0x7f800000u, nan, rounded));
}

}  // namespace collie::detail
