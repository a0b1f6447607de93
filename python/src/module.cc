// The `collie._collie` extension module: collie's C++ API for the `collie` package.
//
// The package (python/collie/*.py) is the public face, laid out like
// mindspore.communication; this module is its engine: tensor conversion
// (convert.cc), the runtime and the operations (bind_comm.cc), and the mapping of
// collie's C++ exceptions to Python ones:
//
//   collie::TypeError    -> TypeError          collie::KeyError     -> KeyError
//   collie::ValueError   -> ValueError         collie::TimeoutError -> TimeoutError (builtin)
//   collie::CommError    -> collie.CommError (a RuntimeError)
//   collie::RuntimeError and any other collie::Error -> RuntimeError
#include <pybind11/pybind11.h>

#include "collie/errors.h"
#include "convert.h"

namespace collie_py {
void bind_comm(py::module_& m);
void bind_autograd(py::module_& m);
}  // namespace collie_py

namespace py = pybind11;

PYBIND11_MODULE(_collie, m) {
  m.doc() = "collie's C++ core (use the `collie` package, not this module).";

  // Never freed: the translator may run until the interpreter is gone.
  static PyObject* comm_error = PyErr_NewExceptionWithDoc(
      "collie.CommError",
      "A communication failure: a peer process died or called a different operation, or a system "
      "call failed. The message names the operation, the group, its sequence number and the ranks.",
      PyExc_RuntimeError, nullptr);
  if (comm_error == nullptr) throw py::error_already_set();
  m.add_object("CommError", py::reinterpret_borrow<py::object>(comm_error));

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const collie::TimeoutError& e) {
      PyErr_SetString(PyExc_TimeoutError, e.what());
    } catch (const collie::CommError& e) {
      PyErr_SetString(comm_error, e.what());
    } catch (const collie::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const collie::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const collie::KeyError& e) {
      PyErr_SetString(PyExc_KeyError, e.what());
    } catch (const collie::Error& e) {  // RuntimeError and anything new
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  collie_py::bind_tensor(m);
  collie_py::bind_comm(m);
  collie_py::bind_autograd(m);

  m.def("_mark_finalizing", &collie_py::mark_finalizing,
        "Called at interpreter exit: references held by collie are leaked from then on.");
  m.def("_is_tensor", [](py::handle obj) { return collie_py::is_tensor_like(obj); });
  m.def("_dtype_name", [](py::handle obj) {
    return std::string(collie::dtype_name(collie_py::to_dtype(obj)));
  });
  // The atexit hook runs after the package's release hook (registered later, run first).
  py::module_::import("atexit").attr("register")(py::cpp_function(&collie_py::mark_finalizing));
}
