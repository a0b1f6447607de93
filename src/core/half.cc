// Half and BFloat16 conversions (declared in collie/dtype.h).
#include "collie/dtype.h"
#include "core/float16.h"

namespace collie {

Half::Half(float value) : bits(detail::float_to_half_bits(value)) {}
Half::operator float() const { return detail::half_bits_to_float(bits); }

BFloat16::BFloat16(float value) : bits(detail::float_to_bfloat16_bits(value)) {}
BFloat16::operator float() const { return detail::bfloat16_bits_to_float(bits); }

}  // namespace collie
