// python/src/all_to_all_calls.cc — `_collie.all_to_all_single_with_output_shape`
// and `all_to_all_with_output_shape`, written against CPython's API with
// fast_call.h's protocol (common argument types at once, NotImplemented for the
// rest, `checked` after comm_func's Python checks):
//
//   all_to_all_single_with_output_shape(output_shape, tensor, output_split_sizes,
//       input_split_sizes, group, async_op[, checked]) -> (array, handle|None)
//   all_to_all_with_output_shape(output_shape_list, input_tensor_list, group,
//       async_op[, checked]) -> (tuple of arrays, handle|None)
//
// Unchecked, they take shapes given as tuples or lists of ints (in a tuple or
// list for the list form), numpy arrays (likewise), split sizes that are None or
// a tuple or list of ints, a str group or None (the world) and a bool; anything
// else declines, and comm_func checks it (a shape given as a tensor, say; inputs
// of different dtypes, whose error comm_func words). Through pybind11 after
// comm_func's checks the single form cost 0.3-0.4 us more from Python than the
// other collectives (2 ranks, 8 B: 1.55-1.79 us against OpenMPI's 1.25-1.36
// through mpi4py); the list form's checks made a numpy array into a collie.Tensor
// per input to read its dtype (1 rank, one 8 B input: 3.9 against the single
// form's 1.0 us).
#include <Python.h>

#include <string>
#include <string_view>
#include <vector>

#include "blocking_call.h"
#include "collie/collie.h"
#include "comm_handle.h"
#include "convert.h"
#include "fast_call.h"
#include "python_error.h"

namespace collie_py {

namespace {

constexpr const char* kSingleName = "all_to_all_single_with_output_shape";

// Whether `obj` is a tuple or list (checked: a subclass of either too, as
// comm_func passes some arguments on as given). Unchecked, anything else declines
// (false); checked, it raises a TypeError naming op and what.
bool is_tuple_or_list(PyObject* obj, bool checked, const char* op, const char* what) {
  if (checked ? PyTuple_Check(obj) || PyList_Check(obj)
              : PyTuple_CheckExact(obj) || PyList_CheckExact(obj)) {
    return true;
  }
  if (!checked) return false;
  throw collie::TypeError(std::string("For ") + op + ", " + what +
                          " must be a tuple or list, but got " + Py_TYPE(obj)->tp_name);
}

// The items of a tuple or list of ints into *out. Unchecked, anything else (a
// bool, an int beyond int64) declines; checked, it raises.
bool read_ints(PyObject* seq, bool checked, const char* op, const char* what,
               std::vector<int64_t>* out) {
  if (!is_tuple_or_list(seq, checked, op, what)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  out->clear();
  out->reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    int overflow = 0;
    const long long v = PyLong_Check(item) ? PyLong_AsLongLongAndOverflow(item, &overflow) : 0;
    if (!PyLong_Check(item) || (!checked && !PyLong_CheckExact(item)) || overflow != 0) {
      if (!checked) return false;
      throw collie::TypeError(std::string("For ") + op + ", " + what +
                              " must hold ints of 64 bits, but got " +
                              py::str(item).cast<std::string>());
    }
    out->push_back(v);
  }
  return true;
}

// None: no split sizes (N equal parts).
bool read_splits(PyObject* obj, bool checked, const char* what, std::vector<int64_t>* out) {
  if (obj == Py_None) {
    out->clear();
    return true;
  }
  return read_ints(obj, checked, kSingleName, what, out);
}

PyObject* all_to_all_single_with_output_shape(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return call_translating([&]() -> PyObject* {
    ArgReader in(kSingleName, args, nargs, 6);
    const bool checked = in.checked();
    collie::Shape shape;
    std::vector<int64_t> out_splits, in_splits;
    collie::Tensor t;
    std::string_view group = collie::WORLD;  // None: the world (comm_func's default)
    bool async_op = false;
    if (!read_ints(args[0], checked, kSingleName, "output_shape", &shape) || !in.tensor(1, &t) ||
        !read_splits(args[2], checked, "output_split_sizes", &out_splits) ||
        !read_splits(args[3], checked, "input_split_sizes", &in_splits) ||
        (args[4] != Py_None && !in.str(4, &group)) || !in.flag(5, &async_op)) {
      return declined();
    }
    auto r = start_or_run(async_op, [&](bool a) {
      return collie::all_to_all_single_with_output_shape(shape, t, out_splits, in_splits, group, a);
    });
    return result_pair(r, async_op).release().ptr();
  });
}

// The list form's inputs: a tuple or list of numpy arrays of one dtype (checked:
// any tensors, which collie checks).
bool read_tensors(PyObject* seq, bool checked, std::vector<collie::Tensor>* out) {
  if (!is_tuple_or_list(seq, checked, "all_to_all_with_output_shape", "input_tensor_list")) {
    return false;
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  out->reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!checked && !is_exact_ndarray(items[i])) return false;
    out->push_back(to_tensor(items[i]));
    if (!checked && out->back().dtype() != out->front().dtype()) return false;
  }
  return true;
}

bool read_shapes(PyObject* seq, bool checked, std::vector<collie::Shape>* out) {
  if (!is_tuple_or_list(seq, checked, "all_to_all_with_output_shape", "output_shape_list")) {
    return false;
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  out->resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!read_ints(items[i], checked, "all_to_all_with_output_shape", "output_shape_list",
                   &(*out)[static_cast<size_t>(i)])) {
      return false;
    }
  }
  return true;
}

PyObject* all_to_all_with_output_shape(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return call_translating([&]() -> PyObject* {
    ArgReader in("all_to_all_with_output_shape", args, nargs, 4);
    const bool checked = in.checked();
    std::vector<collie::Shape> shapes;
    std::vector<collie::Tensor> inputs;
    std::string_view group = collie::WORLD;  // None: the world (comm_func's default)
    bool async_op = false;
    if (!read_shapes(args[0], checked, &shapes) || !read_tensors(args[1], checked, &inputs) ||
        (args[2] != Py_None && !in.str(2, &group)) || !in.flag(3, &async_op)) {
      return declined();
    }
    auto r = start_or_run(async_op, [&](bool a) {
      return collie::all_to_all_with_output_shape(shapes, inputs, group, a);
    });
    py::tuple outputs(r.first.size());
    for (size_t i = 0; i < r.first.size(); ++i) outputs[i] = to_python(r.first[i]);
    return py::make_tuple(outputs, handle_or_none(r.second, async_op)).release().ptr();
  });
}

// all_to_all_v_c(output, input, send_count_matrix, group, async_op): writes into
// `output`; returns None, or the handle with async_op.
PyObject* all_to_all_v_c(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return call_translating([&]() -> PyObject* {
    ArgReader in("all_to_all_v_c", args, nargs, 5);
    const bool checked = in.checked();
    // Unchecked: a list of ints only (comm_func raises its TypeError for a tuple),
    // and async_op a bool (comm_func raises for anything else).
    if (!checked && (!is_exact_ndarray(args[0]) || !is_exact_ndarray(args[1]) ||
                     !PyList_CheckExact(args[2]) || !PyBool_Check(args[4]))) {
      return declined();
    }
    std::vector<int64_t> matrix;
    std::string_view group = collie::WORLD;  // None: the world (comm_func's default)
    bool async_op = false;
    if (!read_ints(args[2], checked, "all_to_all_v_c", "send_count_matrix", &matrix) ||
        (args[3] != Py_None && !in.str(3, &group)) || !in.flag(4, &async_op)) {
      return declined();
    }
    collie::Tensor output = to_tensor(args[0], Access::Write, "output");
    const collie::Tensor input = to_tensor(args[1], Access::Read, "input");
    collie::CommHandle h = start_or_run(
        async_op, [&](bool a) { return collie::all_to_all_v_c(output, input, matrix, group, a); });
    return handle_or_none(h, async_op).release().ptr();
  });
}

PyMethodDef all_to_all_call_defs[] = {
    {kSingleName, fastcall<all_to_all_single_with_output_shape>(), METH_FASTCALL,
     "all_to_all_single_with_output_shape(output_shape, tensor, output_split_sizes, "
     "input_split_sizes, group, async_op[, checked]) -> (array, handle or None)"},
    {"all_to_all_with_output_shape", fastcall<all_to_all_with_output_shape>(), METH_FASTCALL,
     "all_to_all_with_output_shape(output_shape_list, input_tensor_list, group, async_op[, "
     "checked]) -> (tuple of arrays, handle or None)"},
    {"all_to_all_v_c", fastcall<all_to_all_v_c>(), METH_FASTCALL,
     "all_to_all_v_c(output, input, send_count_matrix, group, async_op[, checked]) -> handle "
     "or None"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_all_to_all_calls(py::module_& m) { add_fast_functions(m, all_to_all_call_defs); }

}  // namespace collie_py
