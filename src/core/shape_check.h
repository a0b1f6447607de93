// check_shape: the validity test every new tensor's shape passes, for code that
// allocates before it makes the tensor (empty_shared) and must not take memory
// for a shape that would then be refused.
//
//   detail::check_shape({2, -1});   // ValueError: invalid shape [2, -1]: sizes must be >= 0
#pragma once

#include <cstdint>

#include "collie/tensor.h"

namespace collie::detail {

// The most elements a tensor may have: its bytes fit in int64 at the largest
// element size (8 bytes).
inline constexpr int64_t kMaxElements = INT64_MAX / 8;

// ValueError for a negative size, or more than kMaxElements elements (a count
// that overflows int64 included).
void check_shape(const Shape& shape);

}  // namespace collie::detail
