// python/src/blocking_call.h — how the `_collie` module runs collie's blocking
// calls: without the GIL, and interruptible by a Python signal handler that
// raises (Ctrl-C raises KeyboardInterrupt).
//
//   auto y = blocking([&] { return collie::broadcast(t, src, group); });
//
// A wait in the call checks for Python signals every 50 ms; when a handler
// raises, its exception is raised here, and the operation goes on in the
// background with its tensors kept (src/runtime/interruptible_wait.h).
#pragma once

#include <pybind11/pybind11.h>

#include "runtime/interruptible_wait.h"

namespace collie_py {

namespace py = pybind11;

// Whether Python has a signal to handle: runs its handlers, which may raise
// (leaving the exception set). Called without the GIL, from a blocking wait.
inline bool python_signal_pending() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

template <typename Fn>
auto blocking(Fn&& fn) {
  try {
    py::gil_scoped_release release;
    collie::detail::InterruptibleWaits scope(&python_signal_pending);
    return fn();
  } catch (const collie::detail::WaitInterrupted&) {
    throw py::error_already_set();  // the handler's exception (the GIL is held again)
  }
}

// Runs fn() without the GIL and returns its result (a call that does not wait).
template <typename Fn>
auto nogil(Fn&& fn) {
  py::gil_scoped_release release;
  return fn();
}

// Starts an operation asynchronously with async_op (fn(true) -> (result, handle)),
// else runs it as the blocking call it is (fn(false)), interruptibly.
template <typename Fn>
auto start_or_run(bool async_op, Fn&& fn) {
  if (async_op) return nogil([&] { return fn(true); });
  return blocking([&] { return fn(false); });
}

}  // namespace collie_py
