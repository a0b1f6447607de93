// Local tensor arithmetic for the gradient rules and the tape's local ops.
//
// collie's Tensor is a container; the rules need a little arithmetic on it (scale a
// cotangent, mask it, add halos back, matmul for the tape). These kernels take tensors of
// any strides and return new contiguous tensors. Arithmetic needs a floating dtype:
// float32 and float64 run natively, float16/bfloat16 are widened to float32 and narrowed
// back; anything else is a TypeError naming `what`. The layout helpers (narrow, cat_dim,
// zeros_like) move elements of any dtype.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "collie/tensor.h"

namespace collie::autograd::detail {

// ---- element-wise, numpy broadcasting; both operands must have the same dtype ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& a, double factor);

enum class Unary { Sin, Cos, Exp, Square, Relu, ReluMask };
Tensor unary(const Tensor& a, Unary op);

// 1 where a == b, or where both are NaN (the rule that routes a NaN result's gradient to
// the ranks holding NaN); 0 elsewhere. Same shape and dtype as a (ValueError otherwise).
Tensor equal_mask(const Tensor& a, const Tensor& b);
// s[i] * mask[i] / count[i] where mask[i] != 0, else 0 (never 0/0).
Tensor split_evenly(const Tensor& s, const Tensor& mask, const Tensor& count);
// `stacked` is [N, n]; returns [n] with element i = product over k != row of stacked[k][i],
// from a prefix and a suffix product: exact and finite when some x are zero (no division).
Tensor product_of_others(const Tensor& stacked, int64_t row);
// Sum over the rows of a [N, n] tensor -> [n], accumulated in rank order.
Tensor sum_rows(const Tensor& stacked);

// ---- reductions ----
Tensor sum_all(const Tensor& a);                           // 0-d
Tensor sum_to_shape(const Tensor& g, const Shape& shape);  // undoes broadcasting
Tensor matmul(const Tensor& a, const Tensor& b);           // [m,k] x [k,n]

// ---- broadcasting ----
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view what);

// ---- layout (any dtype) ----
Tensor zeros_like(const Tensor& t);
Tensor flatten(const Tensor& t);
// Positive dim in [0, rank) from a possibly negative one; ValueError naming `what`.
int64_t normalize_dim(int64_t dim, int64_t rank, std::string_view what);
// A strided view of `len` entries of `dim` from `start` (writable through copy_from).
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t len);
// Concatenation along `dim` (a new contiguous tensor).
Tensor cat_dim(const std::vector<Tensor>& parts, int64_t dim);
// Adds `src` into the region `view` of a larger tensor (view comes from narrow()).
void add_into(const Tensor& view, const Tensor& src);

// TypeError unless dtype is floating.
void require_floating(const Tensor& t, std::string_view what);

}  // namespace collie::autograd::detail
