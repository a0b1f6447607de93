// StridedWalker: the element offsets of a strided layout, in row-major order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collie/tensor.h"

namespace collie::detail {

// Starts at offset 0 (the first element); next() moves to the following element
// in row-major order in amortised O(1). Offsets are in elements.
class StridedWalker {
 public:
  StridedWalker(const Shape& shape, const Shape& strides)
      : shape_(shape), strides_(strides), index_(shape.size(), 0) {}

  int64_t offset() const { return offset_; }

  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < shape_[d]) return;
      offset_ -= strides_[d] * shape_[d];
      index_[d] = 0;
    }
  }

 private:
  Shape shape_;
  Shape strides_;
  Shape index_;
  int64_t offset_ = 0;
};

}  // namespace collie::detail
