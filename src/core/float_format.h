// Decimal digits of floating-point values, as numpy prints them.
//
// numpy prints the shortest digits that read back as the same value *in the
// element's own type* (float16 65504 prints as 65500), cut to a maximum number
// of fractional digits. These helpers produce those digits for every float dtype;
// tensor_print.cc lays them out.
#pragma once

#include <string>

#include "collie/dtype.h"

namespace collie::detail {

// A finite value as sign, significant digits and exponent: d.ddd x 10^exponent.
// digits has no leading or trailing zeros, except zero itself, which is "0".
struct Decimal {
  bool negative = false;
  std::string digits = "0";
  int exponent = 0;
};

// The fewest digits that round-trip `value` (finite, exactly representable in
// `dtype`) through `dtype`.
Decimal shortest_decimal(double value, DType dtype);

// A number split as numpy's dragon4 writes it: "-12.5" is {"-12", "5"}; in
// scientific notation "1.25e-05" is {"1", "25", -5}.
struct FloatParts {
  std::string int_part;  // with the sign
  std::string frac_part;
  int exponent = 0;  // scientific notation only
};

// Positional digits as numpy's array printing makes them: the shortest
// round-tripping ones, unless they need more than `max_frac_digits` after the
// point (then the value rounded to that many, trailing zeros dropped) or none
// (then all integer digits exactly: float16 65504 is "65504.", not "65500.").
FloatParts positional_parts(double value, DType dtype, int max_frac_digits);
// Scientific digits, likewise with at most `max_frac_digits` after the point,
// and at least `min_frac_digits`: numpy pads a column of scientific numbers to a
// common precision with the value's own further digits (float16 7.449 shortest
// is 7.45, padded to three digits it is 7.449), not with zeros.
FloatParts scientific_parts(double value, DType dtype, int max_frac_digits,
                            int min_frac_digits = 0);

// A 0-d float as numpy's str() of a scalar: "1.0", "2.5", "1e+16", "1.5e-05", "nan".
std::string format_float_scalar(double value, DType dtype);

}  // namespace collie::detail
