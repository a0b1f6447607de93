// Shortest round-trip digits and their positional / scientific renderings.
#include "core/float_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace collie::detail {

namespace {

// Parses "-1.2340e+05" or "123.4500" into a Decimal, dropping leading and
// trailing zeros.
Decimal parse_decimal(std::string_view text) {
  Decimal result;
  result.digits.clear();
  int point = -1;  // digits seen before the decimal point
  int exponent = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '-') {
      result.negative = true;
    } else if (c == '.') {
      point = static_cast<int>(result.digits.size());
    } else if (c == 'e' || c == 'E') {
      exponent = std::atoi(std::string(text.substr(i + 1)).c_str());
      break;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      result.digits += c;
    }
  }
  if (point < 0) point = static_cast<int>(result.digits.size());
  const size_t first = result.digits.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{result.negative, "0", 0};
  const size_t last = result.digits.find_last_not_of('0');
  result.exponent = exponent + point - 1 - static_cast<int>(first);
  result.digits = result.digits.substr(first, last - first + 1);
  return result;
}

std::string to_text(const Decimal& d) {
  std::string text = d.negative ? "-" : "";
  text += d.digits[0];
  if (d.digits.size() > 1) text += "." + d.digits.substr(1);
  return text + "e" + std::to_string(d.exponent);
}

// True when `candidate` reads back as `value` after rounding into `dtype`.
bool round_trips(const Decimal& candidate, double value, DType dtype) {
  const float parsed = std::strtof(to_text(candidate).c_str(), nullptr);
  if (dtype == DType::Float16) return Half(parsed).bits == Half(static_cast<float>(value)).bits;
  return BFloat16(parsed).bits == BFloat16(static_cast<float>(value)).bits;
}

// float16 / bfloat16 have no std::to_chars: try 1, 2, ... significant digits.
// The correctly rounded candidate can miss the rounding interval where it is
// lopsided (at powers of two) while its neighbour hits it, so try both neighbours.
Decimal shortest_16bit(double value, DType dtype) {
  for (int precision = 0;; ++precision) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*e", precision, value);
    const Decimal nearest = parse_decimal(buf);
    if (round_trips(nearest, value, dtype)) return nearest;
    // The neighbours of the (precision + 1)-digit significand.
    std::string padded = nearest.digits;
    padded.resize(static_cast<size_t>(precision) + 1, '0');
    const long long significand = std::atoll(padded.c_str());
    for (long long neighbour : {significand + 1, significand - 1}) {
      char text[64];
      std::snprintf(text, sizeof text, "%s%llde%d", nearest.negative ? "-" : "", neighbour,
                    nearest.exponent - precision);
      const Decimal candidate = parse_decimal(text);
      if (neighbour > 0 && round_trips(candidate, value, dtype)) return candidate;
    }
  }
}

template <typename T>
Decimal shortest_to_chars(T value) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  return parse_decimal(std::string_view(buf, static_cast<size_t>(result.ptr - buf)));
}

int fraction_digits_positional(const Decimal& d) {
  return std::max(0, static_cast<int>(d.digits.size()) - 1 - d.exponent);
}

FloatParts split_positional(const Decimal& d) {
  FloatParts parts;
  const int ndigits = static_cast<int>(d.digits.size());
  if (d.exponent >= 0) {
    const int int_len = d.exponent + 1;
    parts.int_part = d.digits.substr(0, static_cast<size_t>(std::min(int_len, ndigits)));
    if (int_len > ndigits) parts.int_part.append(static_cast<size_t>(int_len - ndigits), '0');
    if (ndigits > int_len) parts.frac_part = d.digits.substr(static_cast<size_t>(int_len));
  } else {
    parts.int_part = "0";
    parts.frac_part = std::string(static_cast<size_t>(-d.exponent - 1), '0') + d.digits;
  }
  if (d.negative) parts.int_part.insert(0, "-");
  return parts;
}

FloatParts split_scientific(const Decimal& d) {
  FloatParts parts;
  parts.int_part = std::string(d.negative ? "-" : "") + d.digits[0];
  parts.frac_part = d.digits.substr(1);
  parts.exponent = d.exponent;
  return parts;
}

// The exact value rounded to `frac_digits` digits after the point of d.ddd.
Decimal rounded_scientific(double value, int frac_digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", frac_digits, value);
  return parse_decimal(buf);
}

}  // namespace

Decimal shortest_decimal(double value, DType dtype) {
  if (value == 0) return Decimal{std::signbit(value), "0", 0};
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16: return shortest_16bit(value, dtype);
    case DType::Float32: return shortest_to_chars(static_cast<float>(value));
    default: return shortest_to_chars(value);
  }
}

FloatParts positional_parts(double value, DType dtype, int max_frac_digits) {
  const Decimal shortest = shortest_decimal(value, dtype);
  const int frac_digits = fraction_digits_positional(shortest);
  if (frac_digits > 0 && frac_digits <= max_frac_digits) return split_positional(shortest);
  // Too many fractional digits: round to max_frac_digits. None at all: numpy
  // prints every integer digit exactly (float16 65504 is "65504." in an array,
  // though its shortest digits are 655e2), which %.0f does too.
  char buf[400];  // %f of 1e308 has 309 integer digits
  std::snprintf(buf, sizeof buf, "%.*f", frac_digits > 0 ? max_frac_digits : 0, value);
  Decimal rounded = parse_decimal(buf);
  rounded.negative = std::signbit(value);  // keep "-0." for tiny negatives, as numpy does
  return split_positional(rounded);
}

FloatParts scientific_parts(double value, DType dtype, int max_frac_digits, int min_frac_digits) {
  Decimal digits = shortest_decimal(value, dtype);
  if (static_cast<int>(digits.digits.size()) - 1 > max_frac_digits) {
    digits = rounded_scientific(value, max_frac_digits);  // then trailing zeros dropped
  }
  FloatParts parts = split_scientific(digits);
  if (static_cast<int>(parts.frac_part.size()) < min_frac_digits) {
    parts = split_scientific(rounded_scientific(value, min_frac_digits));
    parts.frac_part.resize(static_cast<size_t>(min_frac_digits), '0');  // zeros were dropped
  }
  return parts;
}

std::string format_float_scalar(double value, DType dtype) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // numpy's rule for scalars: positional between 1e-4 and 1e16, else scientific.
  const double magnitude = std::fabs(value);
  if (magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16)) {
    const FloatParts parts = split_positional(shortest_decimal(value, dtype));
    return parts.int_part + "." + (parts.frac_part.empty() ? "0" : parts.frac_part);
  }
  const FloatParts parts = split_scientific(shortest_decimal(value, dtype));
  char exponent[16];
  std::snprintf(exponent, sizeof exponent, "e%+03d", parts.exponent);
  return parts.int_part + (parts.frac_part.empty() ? "" : "." + parts.frac_part) + exponent;
}

}  // namespace collie::detail
