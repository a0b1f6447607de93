// comm_func.CommHandle as a C type (comm_handle.h).
#include "comm_handle.h"

#include <new>
#include <utility>

#include "convert.h"
#include "python_error.h"

namespace collie_py {

namespace {

struct HandleObject {
  PyObject ob_base;           // PyObject_HEAD
  collie::CommHandle handle;  // empty: a handle made without an operation (complete)
};

PyTypeObject* g_handle_type = nullptr;

HandleObject* as_handle(PyObject* self) { return reinterpret_cast<HandleObject*>(self); }

PyObject* handle_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self != nullptr) new (&as_handle(self)->handle) collie::CommHandle();
  return self;
}

// A heap type's instances own a reference to their type.
void handle_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  as_handle(self)->handle.~CommHandle();
  type->tp_free(self);
  Py_DECREF(type);
}

// CommHandle(handle=None, exec_sync=False): MindSpore's signature. `handle` is
// another CommHandle (the same operation) or None; exec_sync is accepted and
// has no effect (collie's wait is host-blocking either way).
int handle_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"handle", "exec_sync", nullptr};
  PyObject* handle = Py_None;
  PyObject* exec_sync = Py_False;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:CommHandle", const_cast<char**>(keywords),
                                   &handle, &exec_sync)) {
    return -1;
  }
  if (handle == Py_None) {
    as_handle(self)->handle = collie::CommHandle();
    return 0;
  }
  if (!PyObject_TypeCheck(handle, g_handle_type)) {
    PyErr_Format(PyExc_TypeError, "CommHandle's handle must be a CommHandle or None, but got %s",
                 Py_TYPE(handle)->tp_name);
    return -1;
  }
  as_handle(self)->handle = as_handle(handle)->handle;
  return 0;
}

// Waits without the GIL in 50 ms slices, so that a Python signal handler that
// raises (Ctrl-C: KeyboardInterrupt) interrupts a wait for a peer that is not
// coming. Raises the operation's error.
PyObject* handle_wait(PyObject* self, PyObject*) {
  return call_translating([&]() -> PyObject* {
    const collie::CommHandle& h = as_handle(self)->handle;
    if (h.is_completed()) {
      h.wait();  // raises its error, if any
      Py_RETURN_NONE;
    }
    for (;;) {
      bool done = false;
      {
        py::gil_scoped_release release;
        done = h.wait_for(0.05);
      }
      if (done) Py_RETURN_NONE;
      if (PyErr_CheckSignals() != 0) return nullptr;
    }
  });
}

PyObject* handle_wait_for(PyObject* self, PyObject* seconds_obj) {
  const double seconds = PyFloat_AsDouble(seconds_obj);
  if (seconds == -1.0 && PyErr_Occurred()) return nullptr;
  return call_translating([&]() -> PyObject* {
    const collie::CommHandle& h = as_handle(self)->handle;
    bool done = false;
    {
      py::gil_scoped_release release;
      done = h.wait_for(seconds);
    }
    return PyBool_FromLong(done);
  });
}

PyObject* handle_is_completed(PyObject* self, PyObject*) {
  return PyBool_FromLong(as_handle(self)->handle.is_completed());
}

PyObject* handle_repr(PyObject* self) {
  return PyUnicode_FromString(as_handle(self)->handle.is_completed()
                                  ? "<collie CommHandle completed>"
                                  : "<collie CommHandle pending>");
}

PyMethodDef handle_methods[] = {
    {"wait", handle_wait, METH_NOARGS,
     "wait()\n--\n\nBlocks until the operation has completed; raises its error."},
    {"wait_for", handle_wait_for, METH_O,
     "wait_for(seconds)\n--\n\nLike wait(), but returns False if not complete after `seconds`."},
    {"is_completed", handle_is_completed, METH_NOARGS,
     "is_completed()\n--\n\nTrue once the operation has finished (successfully or not). Never "
     "blocks."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot handle_slots[] = {
    {Py_tp_doc, const_cast<char*>(
                    "CommHandle(handle=None, exec_sync=False)\n--\n\n"
                    "The handle of an asynchronous operation (``async_op=True``, isend, irecv).\n\n"
                    "``wait()`` blocks until the operation has completed and raises its error\n"
                    "(CommError, TimeoutError, ...), every time it is called; it releases the "
                    "GIL while\nit waits. A handle made without an operation (``CommHandle()``) "
                    "is already\ncomplete. Unlike MindSpore's stream-level wait, collie's wait is "
                    "host-blocking.\n\n"
                    "Example:\n"
                    "    >>> output, handle = comm.comm_func.all_reduce(np.ones([2, 8], "
                    "np.float32), async_op=True)\n"
                    "    >>> handle.wait()\n"
                    "    >>> print(output)\n"
                    "    [[2. 2. 2. 2. 2. 2. 2. 2.]\n"
                    "     [2. 2. 2. 2. 2. 2. 2. 2.]]\n")},
    {Py_tp_new, reinterpret_cast<void*>(handle_new)},
    {Py_tp_init, reinterpret_cast<void*>(handle_init)},
    {Py_tp_dealloc, reinterpret_cast<void*>(handle_dealloc)},
    {Py_tp_methods, handle_methods},
    {Py_tp_repr, reinterpret_cast<void*>(handle_repr)},
    {0, nullptr},
};

// Named as comm_func's class (its __module__ is collie.comm_func).
PyType_Spec handle_spec = {"collie.comm_func.CommHandle", static_cast<int>(sizeof(HandleObject)), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, handle_slots};

}  // namespace

py::object make_handle(collie::CommHandle h) {
  PyObject* self = g_handle_type->tp_alloc(g_handle_type, 0);
  if (self == nullptr) throw py::error_already_set();
  new (&as_handle(self)->handle) collie::CommHandle(std::move(h));
  return py::reinterpret_steal<py::object>(self);
}

py::object handle_or_none(collie::CommHandle h, bool async_op) {
  if (!async_op) return py::none();
  return make_handle(std::move(h));
}

py::tuple result_pair(const std::pair<collie::Tensor, collie::CommHandle>& r, bool async_op) {
  return py::make_tuple(to_python(r.first), handle_or_none(r.second, async_op));
}

void bind_comm_handle(py::module_& m) {
  PyObject* type = PyType_FromSpec(&handle_spec);
  if (type == nullptr) throw py::error_already_set();
  g_handle_type = reinterpret_cast<PyTypeObject*>(type);  // the module's reference keeps it
  m.add_object("CommHandle", py::reinterpret_steal<py::object>(type));
}

}  // namespace collie_py
