// python/src/fast_call.h — how `_collie`'s hot functions, written against
// CPython's API (METH_FASTCALL) instead of bound with pybind11, read their
// arguments (p2p_calls.cc, collective_calls.cc).
//
// Each takes its arguments, then an optional `checked` flag:
//
//   _collie.all_reduce(x, "sum", group, False)        -> result, or NotImplemented
//   _collie.all_reduce(x, "sum", group, False, True)  -> result
//
// Unchecked, a call takes only the common argument types (numpy.ndarray itself,
// int, str, bool, a reduce op's name) and returns NotImplemented for anything
// else, before doing anything; comm_func then runs its Python checks, which
// raise MindSpore's errors, and calls again with checked=True, which converts
// whatever those checks let through. The common call skips the interpreted
// checks and pybind11's dispatch (about a third of an 8-byte call's cost on top
// of C++).
//
// Example:
//   PyObject* f(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
//     return call_translating([&]() -> PyObject* {
//       ArgReader in("f", args, nargs, 2);
//       Tensor t;
//       std::string_view group;
//       if (!in.tensor(0, &t) || !in.str(1, &group)) return declined();
//       ...
//     });
//   }
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

#include "collie/comm.h"
#include "collie/tensor.h"

namespace collie_py {

namespace py = pybind11;

class ArgReader {
 public:
  // `arity` arguments, then the optional flag; collie::TypeError for another count.
  ArgReader(const char* op, PyObject* const* args, Py_ssize_t nargs, Py_ssize_t arity);

  // Each converts argument i into *out and returns true, or returns false when
  // an unchecked call's argument is not of the common type (nothing converted
  // then matters: the caller declines). Errors of checked calls raise.
  bool tensor(Py_ssize_t i, collie::Tensor* out) const;
  bool str(Py_ssize_t i, std::string_view* out) const;
  bool rank(Py_ssize_t i, const char* what, int* out) const;  // a world rank (convert.h)
  bool tag(Py_ssize_t i, int* out) const;
  bool flag(Py_ssize_t i, bool* out) const;
  bool reduce_op(Py_ssize_t i, collie::ReduceOp* out) const;

  // Whether comm_func has checked the arguments (the optional flag).
  bool checked() const { return checked_; }

 private:
  const char* op_;
  PyObject* const* args_;
  bool checked_;
};

// NotImplemented (a new reference): the call declined its arguments.
inline PyObject* declined() { Py_RETURN_NOTIMPLEMENTED; }

// Adds the functions of `defs` (ending with a null name) to the module.
void add_fast_functions(py::module_& m, PyMethodDef* defs);

// A METH_FASTCALL function as PyMethodDef wants it.
template <PyObject* (*Fn)(PyObject*, PyObject* const*, Py_ssize_t)>
PyCFunction fastcall() {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Fn));
}

}  // namespace collie_py
