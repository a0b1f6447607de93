// Reading, writing and converting single tensor elements of any dtype.
//
// Bool elements are read as bytes (any nonzero byte is true) so that memory from
// from_blob holding e.g. 2 is never loaded as an invalid C++ bool.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "collie/dtype.h"

namespace collie::detail {

template <typename T>
inline constexpr bool is_float16_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename T>
T load_element(const void* base, int64_t index) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<const uint8_t*>(base)[index] != 0;
  } else {
    return static_cast<const T*>(base)[index];
  }
}

template <typename T>
void store_element(void* base, int64_t index, T value) {
  if constexpr (std::is_same_v<T, bool>) {
    static_cast<uint8_t*>(base)[index] = value ? 1 : 0;
  } else {
    static_cast<T*>(base)[index] = value;
  }
}

// Half/BFloat16 -> float; every other type unchanged.
template <typename T>
auto widen(T value) {
  if constexpr (is_float16_v<T>) {
    return static_cast<float>(value);
  } else {
    return value;
  }
}

// Float -> integer like numpy on x86: truncate toward zero, wrap to the target
// width through int64 (so -1.0 -> uint8 255). NaN gives 0 and values beyond the
// int64 range saturate, where a plain C++ cast would be undefined.
template <typename To>
To float_to_integer(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 0x1p63) return static_cast<To>(INT64_MAX);
  if (value < -0x1p63) return static_cast<To>(INT64_MIN);
  return static_cast<To>(static_cast<int64_t>(value));
}

// Converts one element between any two element types. To bool: nonzero (NaN
// included) is true. Between integers: wraps (two's complement). To Half and
// BFloat16: through float.
template <typename To, typename From>
To convert_element(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, bool>) {
    return widen(value) != 0;
  } else if constexpr (std::is_same_v<From, bool>) {
    return To(value ? 1.0f : 0.0f);
  } else if constexpr (std::is_integral_v<To>) {
    if constexpr (std::is_integral_v<From>) {
      return static_cast<To>(value);
    } else {
      return float_to_integer<To>(static_cast<double>(widen(value)));
    }
  } else if constexpr (is_float16_v<To>) {
    return To(static_cast<float>(widen(value)));
  } else {
    return static_cast<To>(widen(value));
  }
}

}  // namespace collie::detail
