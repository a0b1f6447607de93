// python/src/all_to_all_calls.cc — `_collie.all_to_all_single_with_output_shape`,
// written against CPython's API with fast_call.h's protocol (common argument
// types at once, NotImplemented for the rest, `checked` after comm_func's Python
// checks):
//
//   all_to_all_single_with_output_shape(output_shape, tensor, output_split_sizes,
//       input_split_sizes, group, async_op[, checked]) -> (array, handle|None)
//
// Unchecked, it takes an output shape given as a tuple or list of ints, a numpy
// array, split sizes that are None or a tuple or list of ints, a str group or
// None (the world) and a bool; anything else declines, and comm_func checks it
// (an output shape given as a tensor, say). Through pybind11 after comm_func's
// checks, the call cost 0.3-0.4 us more from Python than the other collectives
// (2 ranks, 8 B: 1.55-1.79 us against OpenMPI's 1.25-1.36 through mpi4py).
#include <Python.h>

#include <string>
#include <string_view>
#include <vector>

#include "blocking_call.h"
#include "collie/collie.h"
#include "comm_handle.h"
#include "fast_call.h"
#include "python_error.h"

namespace collie_py {

namespace {

constexpr const char* kName = "all_to_all_single_with_output_shape";

// The items of a tuple or list of ints into *out. Unchecked, anything else (a
// bool, an int beyond int64) declines; checked, it raises.
bool read_ints(PyObject* seq, bool checked, const char* what, std::vector<int64_t>* out) {
  if (!PyTuple_CheckExact(seq) && !PyList_CheckExact(seq)) {
    if (!checked) return false;
    throw collie::TypeError(std::string("For ") + kName + ", " + what +
                            " must be a tuple or list of int, but got " + Py_TYPE(seq)->tp_name);
  }
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
      throw collie::TypeError(std::string("For ") + kName + ", " + what +
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
  return read_ints(obj, checked, what, out);
}

PyObject* all_to_all_single_with_output_shape(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return call_translating([&]() -> PyObject* {
    ArgReader in(kName, args, nargs, 6);
    const bool checked = in.checked();
    collie::Shape shape;
    std::vector<int64_t> out_splits, in_splits;
    collie::Tensor t;
    std::string_view group = collie::WORLD;  // None: the world (comm_func's default)
    bool async_op = false;
    if (!read_ints(args[0], checked, "output_shape", &shape) || !in.tensor(1, &t) ||
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

PyMethodDef all_to_all_call_defs[] = {
    {kName, fastcall<all_to_all_single_with_output_shape>(), METH_FASTCALL,
     "all_to_all_single_with_output_shape(output_shape, tensor, output_split_sizes, "
     "input_split_sizes, group, async_op[, checked]) -> (array, handle or None)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_all_to_all_calls(py::module_& m) { add_fast_functions(m, all_to_all_call_defs); }

}  // namespace collie_py
