// How a collective splits its elements over steps: `per_step` elements a step,
// the last step taking the rest. Shared by the staged operations (collectives.cc,
// all_to_all_op.cc).
//
//   size_t n = steps_for(count, per_step);        // steps the op takes
//   Range r = range_of(step, count, per_step);    // elements [r.begin, r.begin + r.len)
#pragma once

#include <algorithm>
#include <cstddef>

namespace collie::detail {

// Every call makes its op with this: a 64-bit division costs tens of cycles, so
// the common case (one step) takes none.
inline size_t steps_for(size_t count, size_t per_step) {
  if (count <= per_step) return 1;
  return (count + per_step - 1) / per_step;
}

// The [begin, begin+len) range of step `step` over `count` elements, `per_step` at a time.
struct Range {
  size_t begin, len;
};
inline Range range_of(size_t step, size_t count, size_t per_step) {
  size_t begin = std::min(count, step * per_step);
  return {begin, std::min(per_step, count - begin)};
}

}  // namespace collie::detail
