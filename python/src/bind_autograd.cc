// collie.autograd's engine: the C++ gradient rules (collie/autograd.h) on Python objects.
//
//   _get_bprop(op_name, attrs: dict) -> _Bprop     attributes converted to AttrValue
//   _Bprop(x, out, dout) -> array | list[array]     the rule, GIL released while it runs
//                                                    (Ctrl-C interrupts it: blocking_call.h)
//   _rule_table() -> list[dict]                      collie::autograd::rule_table()
//
// Attributes: bool -> bool; int -> int64; float -> double; str -> string; a list/tuple
// of ints -> vector<int64_t>, of strs -> vector<string>, of shapes (lists/tuples of
// ints) -> vector<Shape>. numpy bool/integer/floating scalars count as bool/int/float.
// Anything else: TypeError naming the attribute. An empty list fits all three list
// types; it is first given as int64 list and, when the rule asks for a list of shapes
// or of strings (its ValueError says which), given again as that type.
//
// Calls: x, out and dout are each a tensor (numpy array, collie.Tensor, DLPack or buffer
// object), None (no tensor), or a list/tuple of tensors. With no list/tuple among them
// the call is the single-tensor form and returns one array; otherwise the list form,
// returning a list. Results never share memory with an input (a rule that passes a
// cotangent through unchanged gets a copy), so they are always new writeable arrays.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "blocking_call.h"
#include "collie/autograd.h"
#include "collie/errors.h"
#include "convert.h"

namespace collie_py {

namespace {

namespace ag = collie::autograd;
using collie::Shape;
using collie::Tensor;

// ---- attributes ----

std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

py::module_& numpy_module() {
  static auto* np = new py::module_(py::module_::import("numpy"));  // never freed (see convert.cc)
  return *np;
}

bool is_bool(py::handle v) {
  return PyBool_Check(v.ptr()) || py::isinstance(v, numpy_module().attr("bool_"));
}

bool is_int(py::handle v) {
  if (PyBool_Check(v.ptr())) return false;
  return PyLong_Check(v.ptr()) || py::isinstance(v, numpy_module().attr("integer"));
}

bool is_float(py::handle v) {
  return PyFloat_Check(v.ptr()) || py::isinstance(v, numpy_module().attr("floating"));
}

bool is_sequence(py::handle v) { return PyList_Check(v.ptr()) || PyTuple_Check(v.ptr()); }

class AttrError {
 public:
  AttrError(const std::string& op, const std::string& name) : op_(op), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw py::type_error("get_bprop(\"" + op_ + "\"): attribute '" + name_ + "' " + what);
  }
  [[noreturn]] void unsupported(py::handle v) const {
    fail(
        "must be a bool, int, float, str, or a list/tuple of ints, of strs or of shapes "
        "(tuples of ints), but got " +
        describe(v));
  }
  std::string describe(py::handle v) const {
    if (is_sequence(v)) return type_name(v) + " " + py::repr(v).cast<std::string>();
    return type_name(v);
  }

 private:
  std::string op_, name_;
};

int64_t to_int64(py::handle v, const AttrError& err) {
  PyObject* index = PyNumber_Index(v.ptr());
  if (index == nullptr) throw py::error_already_set();
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow != 0) err.fail("does not fit in a 64-bit integer");
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<int64_t>(value);
}

ag::AttrValue to_attr(py::handle v, const AttrError& err, bool* empty_list) {
  *empty_list = false;
  if (is_bool(v)) return v.cast<bool>();
  if (is_int(v)) return to_int64(v, err);
  if (is_float(v)) return v.cast<double>();
  if (PyUnicode_Check(v.ptr())) return v.cast<std::string>();
  if (!is_sequence(v)) err.unsupported(v);
  auto seq = py::reinterpret_borrow<py::sequence>(v);
  if (seq.size() == 0) {
    *empty_list = true;
    return std::vector<int64_t>{};
  }
  py::handle first = seq[0];
  if (is_int(first)) {
    std::vector<int64_t> ints;
    for (py::handle item : seq) {
      if (!is_int(item)) err.unsupported(v);
      ints.push_back(to_int64(item, err));
    }
    return ints;
  }
  if (PyUnicode_Check(first.ptr())) {
    std::vector<std::string> strs;
    for (py::handle item : seq) {
      if (!PyUnicode_Check(item.ptr())) err.unsupported(v);
      strs.push_back(item.cast<std::string>());
    }
    return strs;
  }
  if (is_sequence(first)) {
    std::vector<Shape> shapes;
    for (py::handle item : seq) {
      if (!is_sequence(item)) err.unsupported(v);
      Shape s;
      for (py::handle d : item) {
        if (!is_int(d)) err.unsupported(v);
        s.push_back(to_int64(d, err));
      }
      shapes.push_back(std::move(s));
    }
    return shapes;
  }
  err.unsupported(v);
}

// get_bprop with the empty lists retyped as the rule asks (see the header comment).
ag::Bprop lookup(const std::string& op, ag::Attrs attrs, std::vector<std::string> empty) {
  for (;;) {
    try {
      return ag::get_bprop(op, attrs);
    } catch (const collie::ValueError& e) {
      const std::string msg = e.what();
      bool retyped = false;
      for (auto it = empty.begin(); it != empty.end() && !retyped; ++it) {
        const std::string prefix = "attribute '" + *it + "' must be a list of ";
        if (msg.find(prefix + "shapes") != std::string::npos) {
          attrs[*it] = std::vector<Shape>{};
        } else if (msg.find(prefix + "strings") != std::string::npos) {
          attrs[*it] = std::vector<std::string>{};
        } else {
          continue;
        }
        empty.erase(it);
        retyped = true;
      }
      if (!retyped) throw;
    }
  }
}

ag::Bprop get_bprop(const std::string& op, const py::dict& kwargs) {
  ag::Attrs attrs;
  std::vector<std::string> empty;
  for (auto [key, value] : kwargs) {
    if (!PyUnicode_Check(key.ptr()))
      throw py::type_error("get_bprop: attribute names must be strings");
    const auto name = key.cast<std::string>();
    bool is_empty = false;
    attrs.emplace(name, to_attr(value, AttrError(op, name), &is_empty));
    if (is_empty) empty.push_back(name);
  }
  ag::Bprop b;
  {
    py::gil_scoped_release nogil;  // no communication, but it may take collie's locks
    b = lookup(op, std::move(attrs), std::move(empty));
  }
  return b;
}

// ---- calls ----

struct Arg {
  ag::TensorList tensors;
  bool is_list = false;
};

Arg to_arg(py::handle obj, const char* what) {
  Arg a;
  if (obj.is_none()) return a;
  if (is_sequence(obj)) {
    a.is_list = true;
    size_t i = 0;
    for (py::handle item : obj) {
      const std::string name = std::string(what) + "[" + std::to_string(i++) + "]";
      a.tensors.push_back(to_tensor(item, Access::Read, name.c_str()));
    }
    return a;
  }
  a.tensors.push_back(to_tensor(obj, Access::Read, what));
  return a;
}

// A result that shares storage with an input (a pass-through rule) is copied, so that
// no result aliases the caller's (possibly read-only) arrays.
py::object result(const Tensor& t, const std::vector<const Arg*>& inputs) {
  for (const Arg* a : inputs) {
    for (const Tensor& in : a->tensors) {
      if (t.storage() && t.storage() == in.storage()) return to_python(t.clone());
    }
  }
  return to_python(t);
}

py::object call(const ag::Bprop& b, py::handle x, py::handle out, py::handle dout) {
  const Arg ax = to_arg(x, "x"), aout = to_arg(out, "out"), adout = to_arg(dout, "dout");
  const std::vector<const Arg*> inputs{&ax, &aout, &adout};
  const bool list_form = ax.is_list || aout.is_list || adout.is_list;
  const bool all_single =
      !list_form && ax.tensors.size() == 1 && aout.tensors.size() == 1 && adout.tensors.size() == 1;
  // The rule communicates: without the GIL (other threads and its peers run), and
  // interruptibly (blocking_call.h).
  const ag::TensorList dx = blocking([&]() -> ag::TensorList {
    if (all_single)
      return {b(ax.tensors[0], aout.tensors[0], adout.tensors[0])};  // C++'s single-tensor form
    return b(ax.tensors, aout.tensors, adout.tensors);
  });
  if (!list_form) {
    if (dx.size() != 1) {
      throw collie::ValueError("Bprop of " + b.op() + " returned " + std::to_string(dx.size()) +
                               " tensors; call it with lists");
    }
    return result(dx[0], inputs);
  }
  py::list results;
  for (const Tensor& t : dx) results.append(result(t, inputs));
  return results;
}

py::list rule_table() {
  py::list rows;
  for (const ag::RuleInfo& r : ag::rule_table()) {
    py::dict row;
    row["name"] = r.name;
    row["aliases"] = py::cast(r.aliases);
    row["attrs"] = py::cast(r.attrs);
    row["lists"] = r.lists;
    row["backward"] = r.backward;
    row["vs_mindspore"] = r.vs_mindspore;
    rows.append(row);
  }
  return rows;
}

}  // namespace

void bind_autograd(py::module_& m) {
  py::class_<ag::Bprop>(m, "_Bprop", "A C++ gradient rule bound to one op's attributes.")
      .def_property_readonly("op", &ag::Bprop::op)
      .def("__call__", &call, py::arg("x"), py::arg("out"), py::arg("dout"))
      .def("__repr__",
           [](const ag::Bprop& b) { return "<collie.autograd bprop of " + b.op() + ">"; });
  m.def("_get_bprop", &get_bprop, py::arg("op_name"), py::arg("attrs"));
  m.def("_rule_table", &rule_table);
}

}  // namespace collie_py
