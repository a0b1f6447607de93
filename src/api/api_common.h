// Helpers shared by the comm_func implementations: argument checks with
// MindSpore's messages, and the step from a launched Work to the returned value.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "collie/comm.h"
#include "collie/errors.h"
#include "runtime/group.h"
#include "runtime/runtime_state.h"

namespace collie::detail {

// A description of a call for the choke point (group and seq are stamped there).
inline OpInfo op_info(OpKind kind, const Tensor& t, uint64_t count, ReduceOp op = ReduceOp::SUM,
                      int root = -1, bool blocking = false) {
  OpInfo info;
  info.kind = kind;
  info.count = count;
  info.dtype = t.dtype();
  info.reduce_op = op;
  info.root = root;
  info.blocking = blocking;
  return info;
}

// Waits unless async; returns (output, handle) as comm_func does.
inline std::pair<Tensor, CommHandle> finish(Tensor out, const WorkPtr& work, bool async_op) {
  if (async_op) return {std::move(out), CommHandle(work)};
  work->wait();
  return {std::move(out), CommHandle()};
}

// `t` itself when its elements are contiguous (a view at an offset included),
// else a contiguous copy made in `copy`. Saves the Tensor copy contiguous() makes
// on every call, and keeps views of shared tensors shared. `copy` is an optional
// because even an empty Tensor allocates its shape.
inline const Tensor& contiguous_ref(const Tensor& t, std::optional<Tensor>& copy) {
  if (t.is_contiguous()) return t;
  copy = t.contiguous();
  return *copy;
}

inline std::string shape_str(const Tensor& t) { return shape_to_string(t.shape()); }

}  // namespace collie::detail
