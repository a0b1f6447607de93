// python/src/collective_calls.cc — `_collie.all_reduce, all_gather_into_tensor,
// reduce_scatter_tensor, broadcast, reduce, scatter_tensor, gather_into_tensor`,
// written against CPython's API with fast_call.h's protocol (common
// argument types at once, NotImplemented for the rest, `checked` after
// comm_func's Python checks):
//
//   all_reduce(tensor, op, group, async_op[, checked])             -> (array, handle|None)
//   all_gather_into_tensor(tensor, group, async_op[, checked])     -> (array, handle|None)
//   reduce_scatter_tensor(tensor, op, group, async_op[, checked])  -> (array, handle|None)
//   broadcast(tensor, src, group[, checked])                       -> array
//   reduce(tensor, dst, op, group[, checked])                      -> array
//   scatter_tensor(tensor, src, group[, checked])                  -> array
//   gather_into_tensor(tensor, dst, group[, checked])              -> array
#include <Python.h>

#include <string_view>

#include "blocking_call.h"
#include "collie/collie.h"
#include "comm_handle.h"
#include "convert.h"
#include "fast_call.h"
#include "python_error.h"

namespace collie_py {

namespace {

using collie::ReduceOp;
using collie::Tensor;

// all_reduce's and reduce_scatter_tensor's arguments: (tensor, op, group, async_op).
struct ReductionArgs {
  Tensor tensor;
  ReduceOp op = ReduceOp::SUM;
  std::string_view group;
  bool async_op = false;

  // False: the call declines (fast_call.h).
  bool read(const ArgReader& in) {
    return in.tensor(0, &tensor) && in.reduce_op(1, &op) && in.str(2, &group) &&
           in.flag(3, &async_op);
  }
};

// Runs `call(args, async)` (-> (Tensor, CommHandle)) for a reduction's arguments.
template <typename Call>
PyObject* reduction(const char* name, PyObject* const* args, Py_ssize_t nargs, Call call) {
  return call_translating([&]() -> PyObject* {
    ReductionArgs a;
    if (!a.read(ArgReader(name, args, nargs, 4))) return declined();
    auto r = start_or_run(a.async_op, [&](bool async) { return call(a, async); });
    return result_pair(r, a.async_op).release().ptr();
  });
}

PyObject* all_reduce(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return reduction("all_reduce", args, nargs, [](const ReductionArgs& a, bool async) {
    return collie::all_reduce(a.tensor, a.op, a.group, async);
  });
}

// Declines an input whose first dimension is 0 too: comm_func raises
// MindSpore's ValueError for it.
PyObject* all_gather_into_tensor(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return call_translating([&]() -> PyObject* {
    ArgReader in("all_gather_into_tensor", args, nargs, 3);
    Tensor t;
    std::string_view group;
    bool async_op = false;
    if (!in.tensor(0, &t) || !in.str(1, &group) || !in.flag(2, &async_op)) return declined();
    if (t.dim() > 0 && t.shape()[0] < 1) return declined();
    auto r =
        start_or_run(async_op, [&](bool a) { return collie::all_gather_into_tensor(t, group, a); });
    return result_pair(r, async_op).release().ptr();
  });
}

PyObject* reduce_scatter_tensor(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return reduction("reduce_scatter_tensor", args, nargs, [](const ReductionArgs& a, bool async) {
    return collie::reduce_scatter_tensor(a.tensor, a.op, a.group, async);
  });
}

// broadcast's, scatter_tensor's and gather_into_tensor's arguments, (tensor,
// root, group), through call(tensor, root, group) -> Tensor. `rows_needed`:
// decline an input whose first dimension is 0 (comm_func raises MindSpore's
// TypeError for it in gather_into_tensor).
template <typename Call>
PyObject* rooted(const char* name, const char* root_name, PyObject* const* args, Py_ssize_t nargs,
                 Call call, bool rows_needed = false) {
  return call_translating([&]() -> PyObject* {
    ArgReader in(name, args, nargs, 3);
    Tensor t;
    int root = 0;
    std::string_view group;
    if (!in.tensor(0, &t) || !in.rank(1, root_name, &root) || !in.str(2, &group)) return declined();
    if (rows_needed && t.dim() > 0 && t.shape()[0] < 1) return declined();
    return to_python(blocking([&] { return call(t, root, group); })).release().ptr();
  });
}

PyObject* broadcast(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return rooted("broadcast", "src", args, nargs, [](const Tensor& t, int src, std::string_view g) {
    return collie::broadcast(t, src, g);
  });
}

PyObject* reduce(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return call_translating([&]() -> PyObject* {
    ArgReader in("reduce", args, nargs, 4);
    Tensor t;
    int dst = 0;
    ReduceOp op;
    std::string_view group;
    if (!in.tensor(0, &t) || !in.rank(1, "dst", &dst) || !in.reduce_op(2, &op) ||
        !in.str(3, &group))
      return declined();
    return to_python(blocking([&] { return collie::reduce(t, dst, op, group); })).release().ptr();
  });
}

PyObject* scatter_tensor(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return rooted("scatter_tensor", "src", args, nargs,
                [](const Tensor& t, int src, std::string_view g) {
                  return collie::scatter_tensor(t, src, g);
                });
}

PyObject* gather_into_tensor(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return rooted(
      "gather_into_tensor", "dst", args, nargs,
      [](const Tensor& t, int dst, std::string_view g) {
        return collie::gather_into_tensor(t, dst, g);
      },
      /*rows_needed=*/true);
}

PyMethodDef collective_call_defs[] = {
    {"all_reduce", fastcall<all_reduce>(), METH_FASTCALL,
     "all_reduce(tensor, op, group, async_op[, checked]) -> (array, handle or None)"},
    {"all_gather_into_tensor", fastcall<all_gather_into_tensor>(), METH_FASTCALL,
     "all_gather_into_tensor(tensor, group, async_op[, checked]) -> (array, handle or None)"},
    {"reduce_scatter_tensor", fastcall<reduce_scatter_tensor>(), METH_FASTCALL,
     "reduce_scatter_tensor(tensor, op, group, async_op[, checked]) -> (array, handle or None)"},
    {"broadcast", fastcall<broadcast>(), METH_FASTCALL,
     "broadcast(tensor, src, group[, checked]) -> array"},
    {"reduce", fastcall<reduce>(), METH_FASTCALL,
     "reduce(tensor, dst, op, group[, checked]) -> array"},
    {"scatter_tensor", fastcall<scatter_tensor>(), METH_FASTCALL,
     "scatter_tensor(tensor, src, group[, checked]) -> array"},
    {"gather_into_tensor", fastcall<gather_into_tensor>(), METH_FASTCALL,
     "gather_into_tensor(tensor, dst, group[, checked]) -> array"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_collective_calls(py::module_& m) { add_fast_functions(m, collective_call_defs); }

}  // namespace collie_py
