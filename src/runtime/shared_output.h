// How the api allocates an operation's output: in the shared arena when the
// input is there (so the call can take the single-copy path and its result can
// feed the next one), else in ordinary memory.
#pragma once

#include "collie/tensor.h"

namespace collie::detail {

Tensor new_output(const Tensor& input, const Shape& shape, DType dtype);
// The same with input's shape and dtype (all_reduce, broadcast, reduce's root):
// an ordinary output shares input's layout.
Tensor new_output_like(const Tensor& input);
// The same with input's shape but dim 0 = `rows` (a 0-d input: [rows]): the
// output of a call that gathers or scatters rows (Tensor::uninitialized_rows_like).
Tensor new_output_rows(const Tensor& input, int64_t rows);
// Whether [data, data + nbytes) lies in the shared arena (is_shared of a
// contiguous tensor there).
bool is_shared_memory(const void* data, size_t nbytes);

}  // namespace collie::detail
