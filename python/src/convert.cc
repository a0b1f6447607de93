// Python objects <-> collie::Tensor (see convert.h), and the collie.Tensor class.
#include "convert.h"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <atomic>
#include <bit>
#include <climits>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "collie/errors.h"
#include "core/small_pool.h"

namespace collie_py {

namespace {

using collie::DType;
using collie::Shape;
using collie::Tensor;

// DLPack 0.8's kDLBool; libdlpack-dev 0.6 predates it.
constexpr uint8_t kDLBoolCode = 6;

std::atomic<bool> g_finalizing{false};

// Drops a reference from any thread (the progress thread of an async op included).
void release_pyref(PyObject* obj) {
  if (g_finalizing.load() || !Py_IsInitialized()) return;  // exiting: leak instead
  PyGILState_STATE st = PyGILState_Ensure();
  Py_DECREF(obj);
  PyGILState_Release(st);
}

// Runs a consumed DLPack tensor's deleter (producers may need the GIL, numpy does).
void release_dlpack(DLManagedTensor* mt) {
  if (mt == nullptr || mt->deleter == nullptr) return;
  if (g_finalizing.load() || !Py_IsInitialized()) return;
  PyGILState_STATE st = PyGILState_Ensure();
  mt->deleter(mt);
  PyGILState_Release(st);
}

// Cached modules: never destroyed, so no Py_DECREF after the interpreter is gone.
py::module_& numpy() {
  static auto* np = new py::module_(py::module_::import("numpy"));
  return *np;
}

// ml_dtypes (optional): the module, or None.
py::object& ml_dtypes() {
  static auto* mod = [] {
    try {
      return new py::object(py::module_::import("ml_dtypes"));
    } catch (py::error_already_set&) {
      return new py::object(py::none());
    }
  }();
  return *mod;
}

std::string py_type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

// A numpy dtype -> DType; nullopt-like flag through `ok`.
bool numpy_to_dtype(const py::dtype& dt, DType* out) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'b' && size == 1) return *out = DType::Bool, true;
  if (kind == 'i') {
    if (size == 1) return *out = DType::Int8, true;
    if (size == 2) return *out = DType::Int16, true;
    if (size == 4) return *out = DType::Int32, true;
    if (size == 8) return *out = DType::Int64, true;
  }
  if (kind == 'u' && size == 1) return *out = DType::UInt8, true;
  if (kind == 'f') {
    if (size == 2) return *out = DType::Float16, true;
    if (size == 4) return *out = DType::Float32, true;
    if (size == 8) return *out = DType::Float64, true;
  }
  if (size == 2 && py::str(dt.attr("name")).cast<std::string>() == "bfloat16") {
    return *out = DType::BFloat16, true;
  }
  return false;
}

[[noreturn]] void unsupported_dtype(const std::string& name, const char* what) {
  throw collie::TypeError(std::string("The ") + what + " has dtype " + name +
                          ", which collie does not support (supported: bool, int8, uint8, int16, "
                          "int32, int64, float16, bfloat16, float32, float64)");
}

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Copies a strided (any sign) array of `item`-byte elements into contiguous `dst`.
void strided_copy(char* dst, const char* src, const Shape& shape, const std::vector<int64_t>& byte_strides,
                  size_t item, size_t dim, size_t* written) {
  if (dim == shape.size()) {
    std::memcpy(dst + *written, src, item);
    *written += item;
    return;
  }
  for (int64_t i = 0; i < shape[dim]; ++i) {
    strided_copy(dst, src + i * byte_strides[dim], shape, byte_strides, item, dim + 1, written);
  }
}

Tensor from_numpy(py::array a, Access access, const char* what) {
  DType dtype{};
  if (!numpy_to_dtype(a.dtype(), &dtype)) {
    unsupported_dtype(py::str(a.dtype()).cast<std::string>(), what);
  }
  // numpy's byteorder codes: '=' native, '|' not applicable (one byte), '<' / '>'
  // explicit (read from the descriptor: the `isnative` attribute costs a lookup a call).
  const char order = a.dtype().byteorder();
  const bool native = order == '=' || order == '|' ||
                      order == (std::endian::native == std::endian::little ? '<' : '>');
  const auto item = static_cast<int64_t>(a.itemsize());
  bool viewable = native;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    if (a.strides(d) < 0 || a.strides(d) % item != 0) viewable = false;
  }
  if (access == Access::Write) {
    if (!viewable || !(a.flags() & py::array::c_style)) {
      throw collie::ValueError(std::string("The ") + what +
                               " is written in place and must be a C-contiguous array in native byte "
                               "order (use numpy.ascontiguousarray)");
    }
    if (!a.writeable()) {
      throw collie::ValueError(std::string("The ") + what + " is written in place but is read-only");
    }
  } else if (!native) {
    a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
    viewable = true;
    for (py::ssize_t d = 0; d < a.ndim(); ++d) {
      if (a.strides(d) < 0 || a.strides(d) % item != 0) viewable = false;
    }
  }
  if (!viewable) a = numpy().attr("ascontiguousarray")(a);

  // A C-contiguous array passes no strides: its Tensor then shares the layout
  // collie keeps for its shape instead of making one (an allocation a call).
  // The shape goes into a per-thread scratch vector, which keeps its capacity:
  // the tensor's layout copies it only when it makes a new one.
  const bool c_contiguous = (a.flags() & py::array::c_style) != 0;
  thread_local Shape shape;
  shape.clear();
  Shape strides;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    shape.push_back(static_cast<int64_t>(a.shape(d)));
    if (!c_contiguous) strides.push_back(static_cast<int64_t>(a.strides(d)) / item);
  }
  if (numel_of(shape) == 0) return Tensor::empty(shape, dtype);
  PyObject* ref = a.ptr();
  Py_INCREF(ref);
  try {
    return Tensor::from_blob(const_cast<void*>(a.data()), shape, dtype, strides,
                             [ref](void*) { release_pyref(ref); });
  } catch (...) {
    Py_DECREF(ref);
    throw;
  }
}

DType dlpack_dtype(const DLDataType& t, const char* what) {
  const std::string desc = "DLPack(code=" + std::to_string(t.code) + ", bits=" + std::to_string(t.bits) +
                           ", lanes=" + std::to_string(t.lanes) + ")";
  if (t.lanes != 1) unsupported_dtype(desc, what);
  switch (t.code) {
    case kDLInt:
      if (t.bits == 8) return DType::Int8;
      if (t.bits == 16) return DType::Int16;
      if (t.bits == 32) return DType::Int32;
      if (t.bits == 64) return DType::Int64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::UInt8;
      break;
    case kDLFloat:
      if (t.bits == 16) return DType::Float16;
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::BFloat16;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return DType::Bool;
      break;
    default:
      break;
  }
  unsupported_dtype(desc, what);
}

Tensor from_dlpack(py::handle obj, Access access, const char* what) {
  py::object cap = obj.attr("__dlpack__")();
  if (!PyCapsule_IsValid(cap.ptr(), "dltensor")) {
    throw collie::TypeError(std::string("The ") + what + "'s __dlpack__() did not return a DLPack capsule");
  }
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  // Consumed: the capsule no longer deletes it, we do.
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  struct Owner {
    DLManagedTensor* mt;
    ~Owner() {
      if (mt && mt->deleter) mt->deleter(mt);  // GIL held here
    }
  } owner{mt};

  const DLTensor& dl = mt->dl_tensor;
  const auto dev = static_cast<int>(dl.device.device_type);
  if (dev != kDLCPU && dev != kDLCUDAHost && dev != kDLROCMHost && dev != kDLCUDAManaged) {
    throw collie::TypeError(std::string("The ") + what + " lives on DLPack device type " +
                            std::to_string(dev) + "; collie needs memory the CPU can read");
  }
  const DType dtype = dlpack_dtype(dl.dtype, what);
  const auto item = static_cast<int64_t>(collie::element_size(dtype));
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Shape strides;
  bool negative = false;
  if (dl.strides != nullptr) {
    strides.assign(dl.strides, dl.strides + dl.ndim);
    for (int64_t s : strides) negative |= s < 0;
  }
  char* data = static_cast<char*>(dl.data) + dl.byte_offset;
  if (numel_of(shape) == 0) {
    if (access == Access::Write) return Tensor::from_blob(data, shape, dtype);
    return Tensor::empty(shape, dtype);
  }
  if (negative) {
    if (access == Access::Write) {
      throw collie::ValueError(std::string("The ") + what +
                               " is written in place and must be contiguous (it has negative strides)");
    }
    Tensor copy = Tensor::empty(shape, dtype);
    std::vector<int64_t> byte_strides;
    for (int64_t s : strides) byte_strides.push_back(s * item);
    size_t written = 0;
    strided_copy(static_cast<char*>(copy.data_ptr()), data, shape, byte_strides,
                 static_cast<size_t>(item), 0, &written);
    return copy;  // owner deletes the producer's tensor now
  }
  Tensor view = Tensor::from_blob(data, shape, dtype, strides,
                                  [mt](void*) { release_dlpack(mt); });
  owner.mt = nullptr;  // the view's storage owns it now
  return view;
}

// ---- DLPack export of collie.Tensor ----

struct ExportCtx {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

DLDataType to_dl(DType dtype) {
  const auto bits = static_cast<uint8_t>(collie::element_size(dtype) * 8);
  switch (dtype) {
    case DType::Bool: return {kDLBoolCode, 8, 1};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64: return {kDLInt, bits, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::BFloat16: return {kDLBfloat, 16, 1};
    default: return {kDLFloat, bits, 1};
  }
}

py::capsule to_dlpack(const Tensor& t) {
  auto* ctx = new ExportCtx{t, t.shape(), t.strides()};
  auto* mt = new DLManagedTensor{};
  mt->dl_tensor.data = t.numel() == 0 ? nullptr : t.data_ptr();
  mt->dl_tensor.device = {kDLCPU, 0};
  mt->dl_tensor.ndim = static_cast<int>(t.dim());
  mt->dl_tensor.dtype = to_dl(t.dtype());
  mt->dl_tensor.shape = ctx->shape.data();
  mt->dl_tensor.strides = ctx->strides.data();
  mt->dl_tensor.byte_offset = 0;
  mt->manager_ctx = ctx;
  mt->deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportCtx*>(self->manager_ctx);
    delete self;
  };
  PyObject* cap = PyCapsule_New(mt, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {  // never consumed
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (cap == nullptr) {
    mt->deleter(mt);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

// A numpy array on t's memory (t's dtype must have a numpy dtype).
// What a result array's base capsule holds: the tensor whose memory the array
// is. From the small-object pool, as every call makes one (core/small_pool.h).
struct ArrayOwner {
  Tensor tensor;
  static void* operator new(size_t n) { return collie::detail::pool_alloc(n); }
  static void operator delete(void* p, size_t n) { collie::detail::pool_free(p, n); }
};
constexpr const char* kArrayOwnerName = "collie.ArrayOwner";

// Made through numpy's C API with the shape and strides on the stack: every
// call returns one of these, and py::array's constructor copies both into
// vectors first (two allocations a call).
py::array numpy_view(const Tensor& t, const py::dtype& dt) {
  constexpr int64_t kMaxDims = 32;  // numpy's NPY_MAXDIMS
  if (t.dim() > kMaxDims) {
    throw collie::ValueError("numpy arrays have at most 32 dimensions; the result has " +
                             std::to_string(t.dim()));
  }
  Py_intptr_t shape[kMaxDims], strides[kMaxDims];
  const auto item = static_cast<Py_intptr_t>(t.element_size());
  const int ndim = static_cast<int>(t.dim());
  for (int d = 0; d < ndim; ++d) {
    shape[d] = static_cast<Py_intptr_t>(t.shape()[static_cast<size_t>(d)]);
    strides[d] = static_cast<Py_intptr_t>(t.strides()[static_cast<size_t>(d)]) * item;
  }
  auto& api = py::detail::npy_api::get();
  if (t.numel() == 0) {  // numpy allocates the (empty) array itself
    PyObject* empty = api.PyArray_NewFromDescr_(api.PyArray_Type_, dt.inc_ref().ptr(), ndim, shape,
                                                nullptr, nullptr, 0, nullptr);
    if (empty == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::array>(empty);
  }
  // A plain capsule with a C destructor: pybind11's keeps the deleter as the
  // capsule's context and runs it inside an error scope (1 rank, broadcast of 8 B
  // from Python: 5,773 -> 5,715 instructions a call). Deallocation may run while
  // an exception is set; the owner's destructor only frees collie memory or,
  // through release_pyref, takes the GIL it already holds.
  auto* holder = new ArrayOwner{t};
  PyObject* capsule = PyCapsule_New(holder, kArrayOwnerName, [](PyObject* c) {
    delete static_cast<ArrayOwner*>(PyCapsule_GetPointer(c, kArrayOwnerName));
  });
  if (capsule == nullptr) {
    delete holder;
    throw py::error_already_set();
  }
  auto base = py::reinterpret_steal<py::object>(capsule);
  PyObject* arr =
      api.PyArray_NewFromDescr_(api.PyArray_Type_, dt.inc_ref().ptr(), ndim, shape, strides,
                                t.data_ptr(), py::detail::npy_api::NPY_ARRAY_WRITEABLE_, nullptr);
  if (arr == nullptr) throw py::error_already_set();
  auto array = py::reinterpret_steal<py::array>(arr);
  if (api.PyArray_SetBaseObject_(arr, base.release().ptr()) != 0) throw py::error_already_set();
  return array;
}

py::object tensor_to_array(const Tensor& t, py::object dtype) {
  py::object arr = t.dtype() == DType::BFloat16 ? py::object(numpy_view(t.to(DType::Float32), numpy_dtype(DType::Float32)))
                                                : py::object(numpy_view(t, numpy_dtype(t.dtype())));
  if (!dtype.is_none()) arr = arr.attr("astype")(dtype);
  return arr;
}

}  // namespace

void mark_finalizing() { g_finalizing.store(true); }

bool is_exact_ndarray(PyObject* obj) {
  return Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(py::detail::npy_api::get().PyArray_Type_);
}

bool is_tensor_like(py::handle obj) {
  if (py::isinstance<py::array>(obj) || py::isinstance<Tensor>(obj)) return true;
  if (PyType_Check(obj.ptr())) return false;  // numpy.ndarray itself has a __dlpack__ attribute
  if (py::isinstance(obj, numpy().attr("generic"))) return true;
  if (py::hasattr(obj, "__dlpack__")) return true;
  return PyObject_CheckBuffer(obj.ptr()) != 0;
}

Tensor to_tensor(py::handle obj, Access access, const char* what) {
  // numpy arrays, the common case, first: isinstance<Tensor> looks the class up
  // in pybind11's type registry.
  if (py::isinstance<py::array>(obj))
    return from_numpy(py::reinterpret_borrow<py::array>(obj), access, what);
  if (py::isinstance<Tensor>(obj)) {
    Tensor t = obj.cast<Tensor>();
    if (access == Access::Write && (!t.is_contiguous())) {
      throw collie::ValueError(std::string("The ") + what + " is written in place and must be contiguous");
    }
    return t;
  }
  const bool scalar = py::isinstance(obj, numpy().attr("generic"));
  if (!scalar && !PyType_Check(obj.ptr()) && py::hasattr(obj, "__dlpack__")) return from_dlpack(obj, access, what);
  if (scalar || PyObject_CheckBuffer(obj.ptr())) {
    if (scalar && access == Access::Write) {
      throw collie::ValueError(std::string("The ") + what + " is written in place; a numpy scalar is immutable");
    }
    // memoryview keeps the buffer's format and shape (numpy.asarray(b"..") would be a bytes scalar).
    if (scalar) return from_numpy(numpy().attr("asarray")(obj), access, what);
    PyObject* view = PyMemoryView_FromObject(obj.ptr());
    if (view == nullptr) throw py::error_already_set();
    return from_numpy(numpy().attr("asarray")(py::reinterpret_steal<py::object>(view)), access, what);
  }
  throw collie::TypeError(std::string("The ") + what + " must be a tensor (a numpy array, or an object with "
                          "__dlpack__ or the buffer protocol), but got " + py_type_name(obj));
}

namespace {
// value as an int, or false when it is beyond int's range (or not an int).
bool fits_int(py::handle value, int* out) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || v < INT_MIN || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}
}  // namespace

int rank_arg(py::handle value, const char* op, const char* what) {
  int rank = 0;
  if (!fits_int(value, &rank)) {
    throw collie::KeyError(std::string("For ") + op + ", " + what + " " +
                           py::str(value).cast<std::string>() +
                           " is not a member of any group (ranks are world ranks)");
  }
  return rank;
}

int tag_arg(py::handle value, const char* op) {
  int tag = 0;
  if (!fits_int(value, &tag)) {
    throw collie::ValueError(std::string("For ") + op + ", the tag must fit in 32 bits, but got " +
                             py::str(value).cast<std::string>());
  }
  return tag;
}

py::dtype numpy_dtype(DType dtype) {
  // By type, not by name: parsing "float32" cost every result a string parse.
  // float16 has no C++ type: numpy's number for it (NPY_HALF, fixed in its ABI).
  constexpr int kNumpyHalf = 23;
  switch (dtype) {
    case DType::Bool:
      return py::dtype::of<bool>();
    case DType::Int8:
      return py::dtype::of<int8_t>();
    case DType::UInt8:
      return py::dtype::of<uint8_t>();
    case DType::Int16:
      return py::dtype::of<int16_t>();
    case DType::Int32:
      return py::dtype::of<int32_t>();
    case DType::Int64:
      return py::dtype::of<int64_t>();
    case DType::Float16:
      return py::dtype(kNumpyHalf);
    case DType::Float32:
      return py::dtype::of<float>();
    case DType::Float64:
      return py::dtype::of<double>();
    case DType::BFloat16:
      if (!ml_dtypes().is_none()) return py::dtype::from_args(ml_dtypes().attr("bfloat16"));
      throw collie::TypeError("numpy has no bfloat16 dtype (install ml_dtypes for one)");
  }
  throw collie::TypeError("unknown dtype");
}

py::object to_python(const Tensor& t) {
  if (t.dtype() == DType::BFloat16) {
    if (ml_dtypes().is_none()) return py::cast(t);
    return numpy_view(t, py::dtype("uint16")).attr("view")(numpy_dtype(DType::BFloat16));
  }
  return numpy_view(t, numpy_dtype(t.dtype()));
}

DType to_dtype(py::handle obj) {
  if (py::isinstance<py::str>(obj) || py::hasattr(obj, "_collie_dtype_name")) {
    std::string name = py::isinstance<py::str>(obj) ? obj.cast<std::string>()
                                                    : py::str(obj.attr("_collie_dtype_name")).cast<std::string>();
    try {
      return collie::parse_dtype(name);
    } catch (const collie::ValueError&) {
      unsupported_dtype("'" + name + "'", "dtype");
    }
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
  } catch (py::error_already_set&) {
    throw collie::TypeError("Expected a dtype (a numpy dtype such as numpy.float32, or collie.bfloat16), but got " +
                            py_type_name(obj));
  }
  DType out{};
  if (!numpy_to_dtype(dt, &out)) unsupported_dtype(py::str(dt).cast<std::string>(), "dtype");
  return out;
}

void bind_tensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", R"doc(
A collie tensor: a dtype, a shape and strides over shared storage.

collie's functions return numpy arrays; this class appears only for bfloat16 results
when the ml_dtypes package is not installed, and as a way to hand collie a bfloat16
input. It speaks DLPack (``__dlpack__``), converts with ``numpy.asarray`` (bfloat16
becomes float32) and prints like numpy.

Example:
    >>> t = collie.Tensor(np.arange(4, dtype=np.float32)).astype("bfloat16")
    >>> t.dtype, t.shape
    ('bfloat16', (4,))
    >>> np.asarray(t)
    array([0., 1., 2., 3.], dtype=float32)
)doc")
      .def(py::init([](py::handle obj, py::object dtype) {
             Tensor t = to_tensor(obj, Access::Read, "tensor");
             if (!dtype.is_none()) t = t.to(to_dtype(dtype));
             return t;
           }),
           py::arg("obj"), py::arg("dtype") = py::none(),
           "A tensor viewing `obj`'s memory (numpy array, DLPack or buffer object); with `dtype`, a converted copy.")
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("strides", [](const Tensor& t) { return py::tuple(py::cast(t.strides())); },
                             "Strides in elements.")
      .def_property_readonly("dtype", [](const Tensor& t) { return std::string(collie::dtype_name(t.dtype())); })
      .def_property_readonly("ndim", &Tensor::dim)
      .def_property_readonly("size", &Tensor::numel)
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw py::type_error("len() of a 0-d tensor");
        return t.size(0);
      })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("astype", [](const Tensor& t, py::handle dtype) { return t.to(to_dtype(dtype)); }, py::arg("dtype"),
           "A new tensor converted to `dtype` (a name such as 'float32', a numpy dtype or collie.bfloat16).")
      .def("clone", &Tensor::clone, "An independent contiguous copy.")
      .def("numpy", [](const Tensor& t) -> py::object {
             if (t.dtype() == DType::BFloat16 && ml_dtypes().is_none()) {
               throw collie::TypeError("numpy has no bfloat16 dtype: use .astype('float32').numpy(), "
                                       "numpy.asarray(t) (float32) or install ml_dtypes");
             }
             return to_python(t);
           },
           "A numpy array sharing this tensor's memory.")
      .def("__array__", &tensor_to_array, py::arg("dtype") = py::none())
      .def("tolist", [](const Tensor& t) { return tensor_to_array(t, py::none()).attr("tolist")(); })
      .def("__dlpack__", [](const Tensor& t, const py::args&, const py::kwargs&) { return to_dlpack(t); })
      .def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
      .def("equal", &Tensor::equal, py::arg("other"), "Same shape, dtype and values.")
      .def("__str__", &Tensor::to_string)
      .def("__repr__", [](const Tensor& t) {
        return "collie.Tensor(shape=" + collie::shape_to_string(t.shape()) + ", dtype=" +
               std::string(collie::dtype_name(t.dtype())) + ", value=" + t.to_string() + ")";
      });
}

}  // namespace collie_py
