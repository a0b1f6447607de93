// Small checks shared by the rule implementations.
#pragma once

#include <string>
#include <string_view>

#include "collie/autograd.h"
#include "collie/errors.h"

namespace collie::autograd::detail {

// The single tensor of a list (x, out or dout); ValueError naming op and list otherwise.
inline const Tensor& one(const TensorList& list, std::string_view op, std::string_view which) {
  if (list.size() != 1) {
    throw ValueError("bprop of " + std::string(op) + ": expected one tensor in " +
                     std::string(which) + ", got " + std::to_string(list.size()));
  }
  return list[0];
}

inline void expect_size(const TensorList& list, size_t n, std::string_view op,
                        std::string_view which) {
  if (list.size() != n) {
    throw ValueError("bprop of " + std::string(op) + ": expected " + std::to_string(n) +
                     " tensors in " + std::string(which) + ", got " + std::to_string(list.size()));
  }
}

inline void expect_shape(const Tensor& t, const Shape& shape, std::string_view op,
                         std::string_view which) {
  if (t.shape() != shape) {
    throw ValueError("bprop of " + std::string(op) + ": " + std::string(which) + " has shape " +
                     shape_to_string(t.shape()) + ", expected " + shape_to_string(shape));
  }
}

inline void expect_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.dtype() != b.dtype()) {
    throw TypeError("bprop of " + std::string(op) + ": dtypes differ (" +
                    std::string(dtype_name(a.dtype())) + " and " +
                    std::string(dtype_name(b.dtype())) + ")");
  }
}

}  // namespace collie::autograd::detail
