// python/src/comm_handle.h — comm_func.CommHandle, the handle of an asynchronous
// operation, as a C type of the `_collie` module (comm_handle.cc).
//
// The bindings return handles as CommHandle objects made here: no Python
// __init__, no capsule, and wait() / wait_for() / is_completed() are C methods.
// (As a Python class around a capsule, the handle cost every isend and irecv a
// Python constructor and every wait a Python method and a pybind11 call.)
//
// Example (inside a binding, GIL held):
//   collie::CommHandle h = collie::isend(t, dst, group, tag);
//   return collie_py::make_handle(std::move(h));   // a comm_func.CommHandle
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

#include "collie/handle.h"
#include "collie/tensor.h"

namespace collie_py {

namespace py = pybind11;

// A CommHandle object holding h (a new reference).
py::object make_handle(collie::CommHandle h);

// make_handle(h) for an asynchronous call, None for a synchronous one (whose
// work is done).
py::object handle_or_none(collie::CommHandle h, bool async_op);

// (array, CommHandle) for an asynchronous call, (array, None) for a synchronous one.
py::tuple result_pair(const std::pair<collie::Tensor, collie::CommHandle>& r, bool async_op);

// Registers the type as `_collie.CommHandle`.
void bind_comm_handle(py::module_& m);

}  // namespace collie_py
