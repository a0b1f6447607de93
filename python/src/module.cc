// The `collie._collie` extension module: collie's C++ API for the `collie` package.
//
// The package (python/collie/*.py) is the public face, laid out like
// mindspore.communication; this module is its engine: tensor conversion
// (convert.cc), the runtime and the operations (bind_comm.cc; the hot ones in
// collective_calls.cc, all_to_all_calls.cc, p2p_calls.cc, p2p_op.cc,
// comm_handle.cc), and the
// mapping of collie's C++ exceptions to Python ones (python_error.h).
#include <pybind11/pybind11.h>

#include "collie/errors.h"
#include "convert.h"
#include "python_error.h"

namespace collie_py {
void bind_comm(py::module_& m);
void bind_autograd(py::module_& m);
void bind_p2p_op(py::module_& m);
void bind_comm_handle(py::module_& m);
void bind_p2p_calls(py::module_& m);
void bind_collective_calls(py::module_& m);
void bind_all_to_all_calls(py::module_& m);
}  // namespace collie_py

namespace py = pybind11;

PYBIND11_MODULE(_collie, m) {
  m.doc() = "collie's C++ core (use the `collie` package, not this module).";

  m.add_object("CommError", py::reinterpret_borrow<py::object>(collie_py::comm_error_type()));
  // collie's errors; pybind11 maps the others (python_error.h).
  py::register_exception_translator([](std::exception_ptr p) {
    if (!collie_py::set_collie_error(p)) std::rethrow_exception(p);
  });

  collie_py::bind_tensor(m);
  collie_py::bind_comm_handle(m);
  collie_py::bind_comm(m);
  collie_py::bind_autograd(m);
  collie_py::bind_p2p_op(m);
  collie_py::bind_p2p_calls(m);
  collie_py::bind_collective_calls(m);
  collie_py::bind_all_to_all_calls(m);

  m.def("_mark_finalizing", &collie_py::mark_finalizing,
        "Called at interpreter exit: references held by collie are leaked from then on.");
  m.def("_is_tensor", [](py::handle obj) { return collie_py::is_tensor_like(obj); });
  m.def("_dtype_name", [](py::handle obj) {
    return std::string(collie::dtype_name(collie_py::to_dtype(obj)));
  });
  // The atexit hook runs after the package's release hook (registered later, run first).
  py::module_::import("atexit").attr("register")(py::cpp_function(&collie_py::mark_finalizing));
}
