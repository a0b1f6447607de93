// python/src/p2p_calls.cc — `_collie.send / recv / isend / irecv`, written against
// CPython's API (METH_FASTCALL) rather than bound with pybind11.
//
//   _collie.isend(tensor, dst, group, tag)        -> CommHandle, or NotImplemented
//   _collie.isend(tensor, dst, group, tag, True)  -> CommHandle (arguments checked)
//
// Without the fifth argument a call takes only the common argument types (a numpy
// array, int peer and tag, a str group) and returns NotImplemented for anything
// else; comm_func then checks the arguments in Python, with MindSpore's errors,
// and calls again with True, which converts whatever the checks let through.
// That spares the common call its Python checks and pybind11's dispatch, about
// 0.35 us of an 8-byte isend's 1.1 from Python.
#include <Python.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string_view>

#include "blocking_call.h"
#include "collie/collie.h"
#include "comm_handle.h"
#include "convert.h"
#include "python_error.h"

namespace collie_py {

namespace {

using collie::Tensor;

// One call's arguments, converted.
struct P2PArgs {
  PyObject* tensor;
  int peer;
  std::string_view group;
  int tag;
};

// Reads (tensor, peer, group, tag[, checked]). False with *common false when the
// types are not the common ones (unchecked calls only); false with a Python
// error set for a wrong number of arguments or a group that is not a str.
bool parse(const char* op, const char* what, PyObject* const* args, Py_ssize_t nargs, P2PArgs* out,
           bool* common) {
  *common = true;
  if (nargs != 4 && nargs != 5) {
    PyErr_Format(PyExc_TypeError, "_collie.%s(tensor, peer, group, tag[, checked])", op);
    return false;
  }
  const bool checked = nargs == 5 && PyObject_IsTrue(args[4]) == 1;
  if (!checked && !(is_exact_ndarray(args[0]) && PyLong_CheckExact(args[1]) &&
                    PyUnicode_CheckExact(args[2]) && PyLong_CheckExact(args[3]))) {
    *common = false;
    return false;
  }
  Py_ssize_t size = 0;
  const char* group = PyUnicode_AsUTF8AndSize(args[2], &size);
  if (group == nullptr) return false;
  out->tensor = args[0];
  out->peer = rank_arg(args[1], op, what);
  out->group = std::string_view(group, static_cast<size_t>(size));
  out->tag = tag_arg(args[3], op);
  return true;
}

// Runs body(args) for a call whose arguments parse; NotImplemented for
// uncommon types, null with the Python error for anything raised.
template <typename Body>
PyObject* p2p_call(const char* op, const char* what, PyObject* const* args, Py_ssize_t nargs,
                   Body body) {
  return call_translating([&]() -> PyObject* {
    P2PArgs a;
    bool common = true;
    if (!parse(op, what, args, nargs, &a, &common)) {
      if (common) return nullptr;  // the Python error is set
      Py_RETURN_NOTIMPLEMENTED;
    }
    return body(a);
  });
}

PyObject* send(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return p2p_call("send", "dst", args, nargs, [](const P2PArgs& a) -> PyObject* {
    Tensor t = to_tensor(a.tensor);
    blocking([&] {
      collie::send(t, a.peer, a.group, a.tag);
      return 0;
    });
    Py_RETURN_NONE;
  });
}

PyObject* recv(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return p2p_call("recv", "src", args, nargs, [](const P2PArgs& a) -> PyObject* {
    Tensor t = to_tensor(a.tensor);
    return to_python(blocking([&] { return collie::recv(t, a.peer, a.group, a.tag); }))
        .release()
        .ptr();
  });
}

PyObject* isend(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return p2p_call("isend", "dst", args, nargs, [](const P2PArgs& a) -> PyObject* {
    Tensor t = to_tensor(a.tensor);
    collie::CommHandle h;
    {
      py::gil_scoped_release release;
      h = collie::isend(t, a.peer, a.group, a.tag);
    }
    return make_handle(std::move(h)).release().ptr();
  });
}

// -> (array, CommHandle): the array is valid once the handle's wait() returned.
PyObject* irecv(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return p2p_call("irecv", "src", args, nargs, [](const P2PArgs& a) -> PyObject* {
    Tensor t = to_tensor(a.tensor);
    std::pair<Tensor, collie::CommHandle> r;
    {
      py::gil_scoped_release release;
      r = collie::irecv(t, a.peer, a.group, a.tag);
    }
    py::object array = to_python(r.first);
    py::object handle = make_handle(std::move(r.second));
    return PyTuple_Pack(2, array.ptr(), handle.ptr());
  });
}

template <auto Fn>
PyCFunction fastcall() {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Fn));
}

PyMethodDef p2p_call_defs[] = {
    {"send", fastcall<send>(), METH_FASTCALL,
     "send(tensor, dst, group, tag[, checked]): blocking send (NotImplemented: see p2p_calls.cc)."},
    {"recv", fastcall<recv>(), METH_FASTCALL,
     "recv(tensor, src, group, tag[, checked]) -> array (NotImplemented: see p2p_calls.cc)."},
    {"isend", fastcall<isend>(), METH_FASTCALL,
     "isend(tensor, dst, group, tag[, checked]) -> CommHandle (NotImplemented: see "
     "p2p_calls.cc)."},
    {"irecv", fastcall<irecv>(), METH_FASTCALL,
     "irecv(tensor, src, group, tag[, checked]) -> (array, CommHandle) (NotImplemented: see "
     "p2p_calls.cc)."},
};

}  // namespace

void bind_p2p_calls(py::module_& m) {
  py::object module_name = m.attr("__name__");
  for (PyMethodDef& def : p2p_call_defs) {
    PyObject* fn = PyCFunction_NewEx(&def, nullptr, module_name.ptr());
    if (fn == nullptr) throw py::error_already_set();
    m.add_object(def.ml_name, py::reinterpret_steal<py::object>(fn));
  }
}

}  // namespace collie_py
