// The zero placeholders comm_func returns where a rank receives nothing: an
// isend's 0-d float32 zero (batch_isend_irecv) and, on the ranks that are not
// the destination, reduce's and gather_into_tensor's shape-[1] zero of the
// input's dtype.
//
// A loop is done with each result before its next call, so each thread keeps
// one placeholder of each kind and hands it out again whenever nothing else
// holds it, zeroed again (its last holder may have written to it); while a
// caller still holds it, a new one is made. Either way the caller gets a zero
// tensor no one else holds.
//
//   Tensor out = is_root ? new_output_like(in) : row_placeholder(in.dtype());
#pragma once

#include "collie/tensor.h"

namespace collie::detail {

// A 0-d float32 zero.
Tensor scalar_placeholder();

// A shape-[1] zero of `dtype`.
Tensor row_placeholder(DType dtype);

}  // namespace collie::detail
