// collie/dtype.h — element types of tensors and the 16-bit float types.
//
// DType names the element type of a Tensor. Float16 and BFloat16 are stored as
// 16-bit patterns (collie::Half, collie::BFloat16) and are widened to float for
// arithmetic; collective reductions on them accumulate in float32.
//
// Example:
//   collie::DType t = collie::dtype_of<float>;        // DType::Float32
//   size_t bytes = collie::element_size(t);            // 4
//   collie::Half h(1.5f); float f = h;                 // round-trip 1.5
//   std::cout << collie::dtype_name(t);                // "float32"
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace collie {

enum class DType : uint8_t {
  Bool,
  Int8,
  UInt8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

inline constexpr int kNumDTypes = 10;

// IEEE 754 binary16, stored as its bit pattern. Conversions round to nearest even.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float value);  // NOLINT(google-explicit-constructor): behaves like a float
  operator float() const;  // NOLINT(google-explicit-constructor)
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

// bfloat16 (the top half of a float32), stored as its bit pattern. Round to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float value);  // NOLINT(google-explicit-constructor)
  operator float() const;  // NOLINT(google-explicit-constructor)
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

namespace detail {
[[noreturn]] void throw_invalid_dtype(DType dtype);  // ValueError naming the value
}  // namespace detail

// Size in bytes of one element (ValueError for a value outside the enum), always a
// power of two (the collectives shift by it). Inline: every collective asks
// several times per call.
inline size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::Int8:
    case DType::UInt8: return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Int32:
    case DType::Float32: return 4;
    case DType::Int64:
    case DType::Float64: return 8;
  }
  detail::throw_invalid_dtype(dtype);
}

// Lower-case numpy-style name: "bool", "int8", ..., "float16", "bfloat16", "float32".
std::string_view dtype_name(DType dtype);

// Parses a name produced by dtype_name (also accepts "float", "double", "half",
// "int", "long"); throws collie::ValueError for anything else.
DType parse_dtype(std::string_view name);

bool is_floating(DType dtype);  // Float16, BFloat16, Float32, Float64

// The DType of a C++ element type.
template <typename T>
struct DTypeOf;
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <typename T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

// Calls fn(T{}) with T the C++ type of `dtype` (bool, int8_t, ..., Half, BFloat16,
// float, double) and returns its result. Used to write one template per kernel.
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Bool: return fn(bool{});
    case DType::Int8: return fn(int8_t{});
    case DType::UInt8: return fn(uint8_t{});
    case DType::Int16: return fn(int16_t{});
    case DType::Int32: return fn(int32_t{});
    case DType::Int64: return fn(int64_t{});
    case DType::Float16: return fn(Half{});
    case DType::BFloat16: return fn(BFloat16{});
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
  }
  return fn(float{});  // unreachable for valid enum values
}

}  // namespace collie
