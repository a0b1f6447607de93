// empty_shared / is_shared (collie/shared.h) and the api's output allocation.
#include "collie/shared.h"

#include <string>

#include "backends/shm/arena.h"
#include "collie/errors.h"
#include "core/shape_check.h"
#include "runtime/runtime_state.h"
#include "runtime/shared_output.h"

namespace collie {

Tensor empty_shared(const Shape& shape, DType dtype) {
  // Checked as Tensor::uninitialized checks it, before anything is allocated
  // (two negative sizes would make a positive count, an overflow any count).
  try {
    detail::check_shape(shape);
  } catch (const ValueError& e) {
    throw ValueError(std::string("empty_shared: ") + e.what());
  }
  const int64_t numel = shape_numel(shape);
  auto& arena = detail::SharedArena::instance();
  // The arena serves from init() to release() on the shm backend: then there is
  // nothing to check under the runtime's lock (small calls on shared tensors
  // allocate their outputs here).
  if (!arena.serving()) {
    auto& st = detail::runtime_state();
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.initialized) {
      throw RuntimeError("empty_shared: collie is not initialised; call init() first");
    }
    if (st.backend != "shm") return Tensor::uninitialized(shape, dtype);
  }
  const size_t nbytes = static_cast<size_t>(numel) * element_size(dtype);
  auto [ptr, deleter] = arena.allocate(nbytes);
  return Tensor::from_blob(ptr, shape, dtype, {}, std::move(deleter));
}

bool is_shared(const Tensor& t) {
  // Checked first: every collective asks this of its input to choose its output.
  if (!detail::SharedArena::instance().in_use() || !t.is_contiguous()) return false;
  return detail::is_shared_memory(t.data_ptr(), t.nbytes());
}

namespace detail {

bool is_shared_memory(const void* data, size_t nbytes) {
  const auto& arena = SharedArena::instance();
  return arena.in_use() && arena.locate(data, nbytes).present != 0;
}

Tensor new_output(const Tensor& input, const Shape& shape, DType dtype) {
  if (is_shared(input)) return empty_shared(shape, dtype);
  return Tensor::uninitialized(shape, dtype);
}

Tensor new_output_rows(const Tensor& input, int64_t rows) {
  if (is_shared(input)) {
    // In a per-thread scratch shape: empty_shared only reads it, so a small call
    // on shared tensors allocates no shape.
    thread_local Shape scratch;
    scratch.assign(input.shape().begin(), input.shape().end());  // keeps its capacity
    if (scratch.empty()) {
      scratch.push_back(rows);
    } else {
      scratch[0] = rows;
    }
    return empty_shared(scratch, input.dtype());
  }
  return Tensor::uninitialized_rows_like(input, rows);
}

Tensor new_output_like(const Tensor& input) {
  if (is_shared(input)) return empty_shared(input.shape(), input.dtype());
  return Tensor::uninitialized_like(input);
}

}  // namespace detail
}  // namespace collie
