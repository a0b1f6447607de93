// check_shape: the validity test every new tensor's shape passes, for code that
// allocates before it makes the tensor (empty_shared) and must not take memory
// for a shape that would then be refused.
//
//   detail::check_shape({2, -1});   // ValueError: invalid shape [2, -1]: sizes must be >= 0
#pragma once

#include "collie/tensor.h"

namespace collie::detail {

// ValueError for a negative size, or when the element count overflows int64.
void check_shape(const Shape& shape);

}  // namespace collie::detail
