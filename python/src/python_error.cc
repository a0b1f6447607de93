// The mapping of python_error.h.
#include "python_error.h"

namespace collie_py {

PyObject* comm_error_type() {
  static PyObject* type = [] {
    PyObject* t = PyErr_NewExceptionWithDoc(
        "collie.CommError",
        "A communication failure: a peer process died or called a different operation, or a "
        "system call failed. The message names the operation, the group, its sequence number "
        "and the ranks.",
        PyExc_RuntimeError, nullptr);
    if (t == nullptr) throw py::error_already_set();
    return t;
  }();
  return type;
}

bool set_collie_error(const std::exception_ptr& p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const collie::TimeoutError& e) {
    PyErr_SetString(PyExc_TimeoutError, e.what());
  } catch (const collie::CommError& e) {
    PyErr_SetString(comm_error_type(), e.what());
  } catch (const collie::TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const collie::ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const collie::KeyError& e) {
    PyErr_SetString(PyExc_KeyError, e.what());
  } catch (const collie::Error& e) {  // RuntimeError and anything new
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace collie_py
