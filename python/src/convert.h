// python/src/convert.h — Python objects <-> collie::Tensor, for the `_collie` module.
//
// Inputs: numpy arrays (and numpy scalars), collie.Tensor objects, anything with
// `__dlpack__` (CPU memory), anything with the buffer protocol. The Tensor made from
// them is a view on the object's memory (zero copy) that holds a reference to the
// object; the reference is dropped, with the GIL taken, when collie's last user of
// the memory goes away, which may be the progress thread of an asynchronous
// operation. Layouts a Tensor cannot view (negative or unaligned strides, foreign
// byte order) are copied first.
//
// Outputs: numpy arrays whose memory is the result Tensor's storage (the array's
// base is a capsule that owns a copy of the Tensor; zero copy). bfloat16 has no
// numpy dtype: those results come back as ml_dtypes.bfloat16 arrays when the
// ml_dtypes package is importable, else as collie.Tensor objects (which speak DLPack
// and convert with numpy.asarray to float32).
//
// Example (inside a binding, GIL held):
//   collie::Tensor t = collie_py::to_tensor(obj);     // view on obj's memory
//   collie::Tensor r;
//   { py::gil_scoped_release nogil; r = collie::all_reduce(t).first; }
//   return collie_py::to_python(r);                   // numpy array on r's storage
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "collie/dtype.h"
#include "collie/tensor.h"

namespace collie_py {

namespace py = pybind11;

// How the caller uses the tensor's memory.
enum class Access {
  Read,   // read only: copies are fine when a view is impossible
  Write,  // written in place: must be a writeable, contiguous view (ValueError otherwise)
};

// True for numpy.ndarray itself (not a subclass): the common input, which the
// fast paths of p2p_op.cc and p2p_calls.cc take without further checks.
bool is_exact_ndarray(PyObject* obj);
// True for the objects to_tensor accepts (never raises).
bool is_tensor_like(py::handle obj);

// A Tensor over obj's memory. collie::TypeError for objects that are not tensors and
// for dtypes collie does not have; `what` names the argument in messages.
collie::Tensor to_tensor(py::handle obj, Access access = Access::Read, const char* what = "tensor");

// The Python value of a result tensor (see the header comment).
py::object to_python(const collie::Tensor& t);

// numpy dtype / numpy scalar type / dtype name / collie.bfloat16 -> DType.
// collie::TypeError if obj names no dtype collie has.
collie::DType to_dtype(py::handle obj);

// The numpy dtype of a DType (bfloat16: ml_dtypes' when available, else a TypeError).
py::dtype numpy_dtype(collie::DType dtype);

// A world rank or a tag from a Python int (unbounded), for collie's int. A rank
// outside int's range is nobody's: collie::KeyError (comm_func turns it into
// MindSpore's "not a member" error, as for any other stranger); a tag outside
// it, collie::ValueError. `op` and `what` name the call and argument.
int rank_arg(py::handle value, const char* op, const char* what);
int tag_arg(py::handle value, const char* op);
// Registers collie.Tensor (the C++ Tensor: shape, dtype, numpy(), __dlpack__, ...).
void bind_tensor(py::module_& m);

// Called from an atexit hook after collie.release(): from then on references held
// by tensors are leaked instead of released (the interpreter is going away).
void mark_finalizing();

}  // namespace collie_py
