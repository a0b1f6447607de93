// python/src/p2p_op.cc — the storage of comm_func.P2POp, and batch_isend_irecv's
// path for the common lists, in C.
//
// comm_func.P2POp is a Python subclass of `_collie._P2POpBase`, the C type here:
// six plain, writable attributes (op, tensor, peer, group, tag, recv_dtype) in a
// C struct. Its __init__ accepts the common arguments (op "isend"/"irecv" as a
// str, a numpy array or a shape tuple, int peer and tag, no recv_dtype) at once,
// and hands anything else to the subclass's `_check_args`, the Python checks
// with MindSpore's messages. `_batch_p2p_ops(list, P2POp)` runs
// batch_isend_irecv on a list of exactly-P2POp objects whose attributes are the
// common types, reading them from the struct; for anything else it returns
// NotImplemented and comm_func takes its general path, with every check.
//
// Why: an exchange of two 8-byte arrays made of two P2POps cost 2.5 us from
// Python against 0.6 us in C++, most of it interpreted checks, the Python
// __init__ of each op and pybind11's argument conversions.
#include <Python.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <structmember.h>

#include <string_view>
#include <vector>

#include "blocking_call.h"
#include "collie/collie.h"
#include "convert.h"
#include "fast_call.h"
#include "python_error.h"

namespace collie_py {

namespace {

// The attributes, in the order of P2POp's arguments.
enum Field { kOp, kTensor, kPeer, kGroup, kTag, kRecvDtype, kFieldCount };

struct P2POpObject {
  PyObject ob_base;               // PyObject_HEAD
  PyObject* fields[kFieldCount];  // null only after `del op.<attribute>`

  PyObject* op() const { return fields[kOp]; }
  PyObject* tensor() const { return fields[kTensor]; }
  PyObject* peer() const { return fields[kPeer]; }
  PyObject* group() const { return fields[kGroup]; }
  PyObject* tag() const { return fields[kTag]; }
};

PyObject** fields(PyObject* self) { return reinterpret_cast<P2POpObject*>(self)->fields; }

int p2p_op_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));  // heap types' instances own their type
  PyObject** f = fields(self);
  for (int i = 0; i < kFieldCount; ++i) Py_VISIT(f[i]);
  return 0;
}

int p2p_op_clear(PyObject* self) {
  PyObject** f = fields(self);
  for (int i = 0; i < kFieldCount; ++i) Py_CLEAR(f[i]);
  return 0;
}

// A heap type's instances own a reference to their type (the subclass's, for a
// comm_func.P2POp: its dealloc leaves that to the heap-type base).
void p2p_op_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  p2p_op_clear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// "isend" -> ISEND, "irecv" -> IRECV; false for anything else (not an exact str,
// another value). Literals in Python code are interned: the identity test
// usually answers.
bool op_kind(PyObject* op, collie::P2POp::Kind* kind) {
  if (!PyUnicode_CheckExact(op)) return false;
  static PyObject* isend = PyUnicode_InternFromString("isend");
  static PyObject* irecv = PyUnicode_InternFromString("irecv");
  if (op == isend || PyUnicode_Compare(op, isend) == 0) {
    *kind = collie::P2POp::Kind::ISEND;
    return true;
  }
  if (op == irecv || PyUnicode_Compare(op, irecv) == 0) {
    *kind = collie::P2POp::Kind::IRECV;
    return true;
  }
  return false;
}

// __init__(op, tensor, peer, group=None, tag=0, *, recv_dtype=None).
int p2p_op_init(PyObject* self_obj, PyObject* args, PyObject* kwargs) {
  PyObject* op = nullptr;
  PyObject* tensor = nullptr;
  PyObject* peer = nullptr;
  PyObject* group = Py_None;
  PyObject* tag = nullptr;
  PyObject* recv_dtype = Py_None;
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (kwargs == nullptr && n >= 3 && n <= 5) {  // the usual call, without the parser
    op = PyTuple_GET_ITEM(args, 0);
    tensor = PyTuple_GET_ITEM(args, 1);
    peer = PyTuple_GET_ITEM(args, 2);
    if (n > 3) group = PyTuple_GET_ITEM(args, 3);
    if (n > 4) tag = PyTuple_GET_ITEM(args, 4);
  } else {
    static const char* keywords[] = {"op", "tensor", "peer", "group", "tag", "recv_dtype", nullptr};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OO$O:P2POp", const_cast<char**>(keywords),
                                     &op, &tensor, &peer, &group, &tag, &recv_dtype)) {
      return -1;
    }
  }
  static PyObject* zero = PyLong_FromLong(0);
  if (tag == nullptr) tag = zero;

  collie::P2POp::Kind kind;
  const bool common = op_kind(op, &kind) &&
                      (is_exact_ndarray(tensor) || PyTuple_CheckExact(tensor)) &&
                      PyLong_CheckExact(peer) && PyLong_CheckExact(tag) && recv_dtype == Py_None;
  if (!common) {  // the Python checks raise MindSpore's errors
    PyObject* ok =
        PyObject_CallMethod(self_obj, "_check_args", "OOOOO", op, tensor, peer, tag, recv_dtype);
    if (ok == nullptr) return -1;
    Py_DECREF(ok);
  }
  PyObject* values[kFieldCount] = {op, tensor, peer, group, tag, recv_dtype};
  PyObject** f = fields(self_obj);
  for (int i = 0; i < kFieldCount; ++i) Py_XSETREF(f[i], Py_NewRef(values[i]));
  return 0;
}

constexpr Py_ssize_t field_offset(Field f) {
  return static_cast<Py_ssize_t>(offsetof(P2POpObject, fields) + sizeof(PyObject*) * f);
}

PyMemberDef p2p_op_members[] = {
    {"op", T_OBJECT_EX, field_offset(kOp), 0, "\"isend\" or \"irecv\" (or the function)."},
    {"tensor", T_OBJECT_EX, field_offset(kTensor), 0,
     "The data to send; for irecv a template tensor or a shape tuple."},
    {"peer", T_OBJECT_EX, field_offset(kPeer), 0, "The peer's world rank."},
    {"group", T_OBJECT_EX, field_offset(kGroup), 0, "The group's name, or None (the world)."},
    {"tag", T_OBJECT_EX, field_offset(kTag), 0, "Matched with the peer's tag."},
    {"recv_dtype", T_OBJECT_EX, field_offset(kRecvDtype), 0,
     "The dtype of an irecv given by shape."},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot p2p_op_slots[] = {
    // The first line is the signature inspect.signature(comm_func.P2POp) shows.
    {Py_tp_doc,
     const_cast<char*>("_P2POpBase(op, tensor, peer, group=None, tag=0, *, recv_dtype=None)\n--\n\n"
                       "The attributes of comm_func.P2POp (use that class).")},
    {Py_tp_traverse, reinterpret_cast<void*>(p2p_op_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(p2p_op_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(p2p_op_dealloc)},
    {Py_tp_members, p2p_op_members},
    {Py_tp_init, reinterpret_cast<void*>(p2p_op_init)},
    {Py_tp_new, reinterpret_cast<void*>(PyType_GenericNew)},
    {0, nullptr},
};

PyType_Spec p2p_op_spec = {"collie._collie._P2POpBase", static_cast<int>(sizeof(P2POpObject)), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
                           p2p_op_slots};

// One op of the list as collie::P2POp, if its attributes are the common types:
// op "isend"/"irecv" as a str, a numpy array, int peer and tag, group None or
// a str.
bool common_op(PyObject* item, std::vector<collie::P2POp>* ops) {
  auto* p = reinterpret_cast<P2POpObject*>(item);
  collie::P2POp::Kind kind;
  if (p->op() == nullptr || !op_kind(p->op(), &kind)) return false;
  if (p->tensor() == nullptr || !is_exact_ndarray(p->tensor())) return false;
  if (p->peer() == nullptr || !PyLong_CheckExact(p->peer())) return false;
  if (p->tag() == nullptr || !PyLong_CheckExact(p->tag())) return false;
  if (p->group() == nullptr || (p->group() != Py_None && !PyUnicode_CheckExact(p->group())))
    return false;
  std::string_view group = collie::WORLD;
  if (p->group() != Py_None) {
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(p->group(), &size);
    if (utf8 == nullptr) {
      PyErr_Clear();  // a str that is not valid UTF-8: the general path says so
      return false;
    }
    group = std::string_view(utf8, static_cast<size_t>(size));
  }
  ops->emplace_back(kind == collie::P2POp::Kind::ISEND ? "isend" : "irecv",
                    to_tensor(py::handle(p->tensor())),
                    rank_arg(p->peer(), "batch_isend_irecv", "peer"), group,
                    tag_arg(p->tag(), "batch_isend_irecv"));
  return true;
}

// _batch_p2p_ops(p2p_op_list, P2POp) -> tuple of results, or NotImplemented.
PyObject* batch_p2p_ops(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "_batch_p2p_ops(p2p_op_list, P2POp)");
    return nullptr;
  }
  PyObject* list = args[0];
  PyObject* cls = args[1];
  if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) == 0 || !collie::is_initialized()) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  return call_translating([&]() -> PyObject* {
    const Py_ssize_t n = PyList_GET_SIZE(list);
    std::vector<collie::P2POp> ops;
    ops.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PyList_GET_ITEM(list, i);
      if (reinterpret_cast<PyObject*>(Py_TYPE(item)) != cls || !common_op(item, &ops)) {
        Py_RETURN_NOTIMPLEMENTED;
      }
    }
    auto results = blocking([&] { return collie::batch_isend_irecv(ops); });
    py::tuple out(results.size());
    for (size_t i = 0; i < results.size(); ++i) out[i] = to_python(results[i]);
    return out.release().ptr();
  });
}

PyMethodDef batch_p2p_ops_defs[] = {
    {"_batch_p2p_ops", fastcall<batch_p2p_ops>(), METH_FASTCALL,
     "_batch_p2p_ops(p2p_op_list, P2POp): batch_isend_irecv of a list of P2POp objects whose "
     "attributes are the common types, else NotImplemented."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_p2p_op(py::module_& m) {
  PyObject* type = PyType_FromSpec(&p2p_op_spec);
  if (type == nullptr) throw py::error_already_set();
  m.add_object("_P2POpBase", py::reinterpret_steal<py::object>(type));
  add_fast_functions(m, batch_p2p_ops_defs);
}

}  // namespace collie_py
