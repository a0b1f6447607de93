// The argument conversions of fast_call.h.
#include "fast_call.h"

#include <string>

#include "collie/errors.h"
#include "convert.h"

namespace collie_py {

ArgReader::ArgReader(const char* op, PyObject* const* args, Py_ssize_t nargs, Py_ssize_t arity)
    : op_(op), args_(args), checked_(false) {
  if (nargs != arity && nargs != arity + 1) {
    throw collie::TypeError(std::string("_collie.") + op + " takes " + std::to_string(arity) +
                            " arguments and an optional `checked` flag, but got " +
                            std::to_string(nargs));
  }
  if (nargs == arity + 1) {
    const int truth = PyObject_IsTrue(args[arity]);
    if (truth < 0) throw py::error_already_set();
    checked_ = truth == 1;
  }
}

bool ArgReader::tensor(Py_ssize_t i, collie::Tensor* out) const {
  if (!checked_ && !is_exact_ndarray(args_[i])) return false;
  *out = to_tensor(args_[i]);
  return true;
}

bool ArgReader::str(Py_ssize_t i, std::string_view* out) const {
  PyObject* obj = args_[i];
  if (checked_ ? !PyUnicode_Check(obj) : !PyUnicode_CheckExact(obj)) {
    if (!checked_) return false;
    throw collie::TypeError(std::string("For ") + op_ + ", expected a str, but got " +
                            Py_TYPE(obj)->tp_name);
  }
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(obj, &size);
  if (utf8 == nullptr) throw py::error_already_set();
  *out = std::string_view(utf8, static_cast<size_t>(size));
  return true;
}

bool ArgReader::rank(Py_ssize_t i, const char* what, int* out) const {
  if (!checked_ && !PyLong_CheckExact(args_[i])) return false;
  *out = rank_arg(args_[i], op_, what);
  return true;
}

bool ArgReader::tag(Py_ssize_t i, int* out) const {
  if (!checked_ && !PyLong_CheckExact(args_[i])) return false;
  *out = tag_arg(args_[i], op_);
  return true;
}

bool ArgReader::flag(Py_ssize_t i, bool* out) const {
  PyObject* obj = args_[i];
  if (obj == Py_True || obj == Py_False) {
    *out = obj == Py_True;
    return true;
  }
  if (!checked_) return false;
  const int truth = PyObject_IsTrue(obj);
  if (truth < 0) throw py::error_already_set();
  *out = truth == 1;
  return true;
}

bool ArgReader::reduce_op(Py_ssize_t i, collie::ReduceOp* out) const {
  std::string_view name;
  if (!str(i, &name)) return false;
  if (!checked_) {  // a bad name declines: comm_func raises MindSpore's error for it
    for (collie::ReduceOp op : {collie::ReduceOp::SUM, collie::ReduceOp::PROD,
                                collie::ReduceOp::MIN, collie::ReduceOp::MAX}) {
      if (name == collie::reduce_op_name(op)) {
        *out = op;
        return true;
      }
    }
    return false;
  }
  *out = collie::parse_reduce_op(name, op_);
  return true;
}

void add_fast_functions(py::module_& m, PyMethodDef* defs) {
  py::object module_name = m.attr("__name__");
  for (PyMethodDef* def = defs; def->ml_name != nullptr; ++def) {
    PyObject* fn = PyCFunction_NewEx(def, nullptr, module_name.ptr());
    if (fn == nullptr) throw py::error_already_set();
    m.add_object(def->ml_name, py::reinterpret_steal<py::object>(fn));
  }
}

}  // namespace collie_py
