// python/src/python_error.h — collie's C++ exceptions as Python exceptions, for
// the `_collie` module: one mapping, used by pybind11's translator (module.cc)
// and by the functions written against CPython's API directly (p2p_op.cc):
//
//   collie::TypeError    -> TypeError          collie::KeyError     -> KeyError
//   collie::ValueError   -> ValueError         collie::TimeoutError -> TimeoutError (builtin)
//   collie::CommError    -> collie.CommError (a RuntimeError)
//   collie::RuntimeError and any other collie::Error -> RuntimeError
//
// Example (a METH_FASTCALL function):
//   PyObject* f(PyObject*, PyObject* const* args, Py_ssize_t n) {
//     return call_translating([&]() -> PyObject* { ...; return result; });
//   }
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <new>

#include "collie/errors.h"

namespace collie_py {

namespace py = pybind11;

// Creates collie.CommError (once; never freed: errors may be raised until the
// interpreter is gone).
PyObject* comm_error_type();

// Sets the Python exception for a collie error; false for other exceptions.
bool set_collie_error(const std::exception_ptr& p);

// Runs fn (which returns a new reference, or null with a Python error set) and
// turns any exception it throws into the Python exception: collie's as above,
// pybind11's error_already_set as what it holds, bad_alloc as MemoryError,
// anything else as RuntimeError.
template <typename Fn>
PyObject* call_translating(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const collie::Error&) {
    set_collie_error(std::current_exception());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

}  // namespace collie_py
