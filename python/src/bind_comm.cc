// The runtime (init, groups, rank queries) and the comm_func operations, bound for
// the pure-Python layer (python/collie/*.py), which validates arguments with
// MindSpore's messages and resolves group names before calling these. (The hot
// operations are C functions instead: collective_calls.cc, all_to_all_calls.cc,
// p2p_calls.cc.) barrier stays here: its cost is the wait, not the binding.
//
// Every call into collie runs with the GIL released: collectives block, and a
// tensor's storage may be released by collie's progress thread, which then needs the
// GIL to drop its reference to the Python object. Synchronous calls are collie's
// blocking calls, made interruptible (runtime/interruptible_wait.h): Ctrl-C (a
// signal handler that raises) abandons the wait and raises here, while the
// operation goes on in the background with its tensors kept. (They used to start
// asynchronously and wait in slices, which handed each call to the progress thread
// and back: 2 ranks, all_reduce 8 B, 3.3 -> 1.5 us a call from Python; 1.25 with the
// conversions of convert.cc made cheaper.)
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "blocking_call.h"
#include "collie/collie.h"
#include "comm_handle.h"
#include "convert.h"

namespace collie_py {

namespace {

using collie::CommHandle;
using collie::Shape;
using collie::Tensor;

Shape to_shape(py::handle obj) {
  Shape s;
  for (py::handle d : obj) s.push_back(d.cast<int64_t>());
  return s;
}

void bind_runtime(py::module_& m) {
  m.def("version", [] { return std::string(collie::version()); });
  m.def("init", [](const std::string& backend) { nogil([&] { collie::init(backend); return 0; }); },
        py::arg("backend_name") = "");
  m.def("release", [] { nogil([] { collie::release(); return 0; }); });
  // Never blocks (collie/runtime.h): the GIL stays held, which costs a small call
  // less than handing it over (batch_isend_irecv asks every time).
  m.def("is_initialized", [] { return collie::is_initialized(); });
  m.def("world_group_name", [] { return nogil([] { return collie::world_group_name(); }); });
  m.def("backend_name", [] { return nogil([] { return collie::backend_name(); }); });
  m.def("get_rank", [](const std::string& g) { return nogil([&] { return collie::get_rank(g); }); },
        py::arg("group"));
  m.def("get_group_size", [](const std::string& g) { return nogil([&] { return collie::get_group_size(g); }); },
        py::arg("group"));
  m.def("get_local_rank", [](const std::string& g) { return nogil([&] { return collie::get_local_rank(g); }); },
        py::arg("group"));
  m.def("get_local_rank_size",
        [](const std::string& g) { return nogil([&] { return collie::get_local_rank_size(g); }); },
        py::arg("group"));
  m.def("get_world_rank_from_group_rank",
        [](const std::string& g, int r) { return nogil([&] { return collie::get_world_rank_from_group_rank(g, r); }); },
        py::arg("group"), py::arg("group_rank_id"));
  m.def("get_group_rank_from_world_rank",
        [](int r, const std::string& g) { return nogil([&] { return collie::get_group_rank_from_world_rank(r, g); }); },
        py::arg("world_rank_id"), py::arg("group"));
  m.def("get_process_group_ranks",
        [](const std::string& g) { return nogil([&] { return collie::get_process_group_ranks(g); }); },
        py::arg("group"));
  m.def("create_group",
        [](const std::string& g, const std::vector<int>& ranks, double timeout_seconds) {
          collie::GroupOptions options;
          options.timeout_seconds = timeout_seconds;
          nogil([&] { collie::create_group(g, ranks, options); return 0; });
        },
        py::arg("group"), py::arg("rank_ids"), py::arg("timeout_seconds") = 0.0);
  m.def("destroy_group", [](const std::string& g) { nogil([&] { collie::destroy_group(g); return 0; }); },
        py::arg("group"));
}

void bind_collectives(py::module_& m) {
  m.def("barrier", [](std::string_view group) {
    blocking([&] {
      collie::barrier(group);
      return 0;
    });
  });
}

void bind_batch(py::module_& m) {
  // ops: (op, tensor or None, shape or None, dtype or None, peer, group, tag) per P2POp.
  m.def("batch_isend_irecv", [](const py::list& ops) {
    std::vector<collie::P2POp> list;
    list.reserve(ops.size());
    for (py::handle item : ops) {
      auto op = item.cast<py::tuple>();
      // Views on the Python strings (which the tuple keeps alive): no copies.
      const auto kind = op[0].cast<std::string_view>();
      const int peer = rank_arg(op[4], "batch_isend_irecv", "peer");
      const auto group = op[5].cast<std::string_view>();
      const int tag = tag_arg(op[6], "batch_isend_irecv");
      if (!op[1].is_none()) {
        list.emplace_back(kind, to_tensor(op[1]), peer, group, tag);
      } else {
        list.emplace_back(kind, to_shape(op[2]), peer, group, tag, to_dtype(op[3]));
      }
    }
    auto results = blocking([&] { return collie::batch_isend_irecv(list); });
    py::tuple out(results.size());
    for (size_t i = 0; i < results.size(); ++i) out[i] = to_python(results[i]);
    return out;
  });
}

}  // namespace

// empty_shared / is_shared (collie/shared.h): arrays in the shared arena. The
// result is a numpy array over the arena block (freed when the array is).
void bind_shared(py::module_& m) {
  m.def("empty_shared", [](py::handle shape, py::handle dtype) {
    Shape s = to_shape(shape);
    collie::DType dt = to_dtype(dtype);
    return to_python(nogil([&] { return collie::empty_shared(s, dt); }));
  });
  m.def("is_shared", [](py::handle x) { return is_tensor_like(x) && collie::is_shared(to_tensor(x)); });
}

void bind_comm(py::module_& m) {
  bind_runtime(m);
  bind_shared(m);
  bind_collectives(m);
  bind_batch(m);
}

}  // namespace collie_py
