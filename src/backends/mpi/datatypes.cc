#include "backends/mpi/datatypes.h"

#include <cstdlib>
#include <cstring>

#include "collie/errors.h"
#include "core/reduce_kernels.h"

namespace collie::detail {
namespace {

// The dtypes MPI never reduces with its own ops: bool and the 16-bit floats have
// no MPI type, and Open MPI 4.1's AVX reductions saturate 8- and 16-bit integer
// sums instead of wrapping (open-mpi/ompi#8045, "wontfix"). Each gets a contiguous
// type of its width, reduced by collie's kernels through a user MPI_Op.
constexpr DType kCustom[] = {DType::Bool,  DType::Int8,    DType::UInt8,
                             DType::Int16, DType::Float16, DType::BFloat16};
constexpr int kNumCustom = 6;

// Written once on the progress thread before any operation uses them; read by the
// user ops, which MPI calls on that same thread.
MPI_Datatype g_custom_types[kNumCustom] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL,
                                           MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
MPI_Op g_user_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

constexpr ReduceOp kOps[4] = {ReduceOp::SUM, ReduceOp::PROD, ReduceOp::MIN, ReduceOp::MAX};

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return 0;
    case ReduceOp::PROD:
      return 1;
    case ReduceOp::MIN:
      return 2;
    case ReduceOp::MAX:
      return 3;
  }
  return 0;
}

int custom_index(DType d) {
  for (int i = 0; i < kNumCustom; ++i) {
    if (kCustom[i] == d) return i;
  }
  return -1;
}

DType custom_dtype(MPI_Datatype t) {
  for (int i = 0; i < kNumCustom; ++i) {
    if (g_custom_types[i] == t) return kCustom[i];
  }
  return DType::UInt8;  // unreachable: the ops are only used with the custom types
}

// MPI's contract: inout[i] = in[i] op inout[i]. reduce_n gives collie's semantics
// (fp32 arithmetic for 16-bit floats, or/and for bool, wrapping integers,
// NaN-propagating min/max), one pair at a time.
template <int I>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype* type) {
  const void* srcs[2] = {in, inout};
  reduce_n(inout, srcs, 2, static_cast<size_t>(*len), custom_dtype(*type), kOps[I]);
}

MPI_Datatype make_bytes_type(int bytes) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  if (MPI_Type_contiguous(bytes, MPI_BYTE, &t) != MPI_SUCCESS ||
      MPI_Type_commit(&t) != MPI_SUCCESS) {
    throw CommError("init: could not create an MPI datatype for " + std::to_string(bytes) +
                    "-byte elements");
  }
  return t;
}

}  // namespace

ReductionMode reduction_mode_from_env() {
  const char* v = std::getenv("COLLIE_MPI_REDUCTION");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return ReductionMode::Auto;
  if (std::strcmp(v, "native") == 0) return ReductionMode::Native;
  if (std::strcmp(v, "ordered") == 0) return ReductionMode::Ordered;
  throw ValueError(std::string("environment variable COLLIE_MPI_REDUCTION='") + v +
                   "' is not one of auto, native, ordered");
}

const char* reduction_mode_name(ReductionMode mode) {
  switch (mode) {
    case ReductionMode::Auto:
      return "auto";
    case ReductionMode::Native:
      return "native";
    case ReductionMode::Ordered:
      return "ordered";
  }
  return "auto";
}

bool reduces_natively(ReductionMode mode, DType dtype) {
  switch (mode) {
    case ReductionMode::Native:
      return true;
    case ReductionMode::Ordered:
      return false;
    case ReductionMode::Auto:
      break;
  }
  // Integers whose sums MPI wraps: their results do not depend on the order.
  return dtype == DType::Int32 || dtype == DType::Int64;
}

void init_mpi_types() {
  if (g_custom_types[0] != MPI_DATATYPE_NULL) return;
  for (int i = 0; i < kNumCustom; ++i) {
    g_custom_types[i] = make_bytes_type(static_cast<int>(element_size(kCustom[i])));
  }
  using Fn = void (*)(void*, void*, int*, MPI_Datatype*);
  const Fn fns[4] = {&user_reduce<0>, &user_reduce<1>, &user_reduce<2>, &user_reduce<3>};
  for (int i = 0; i < 4; ++i) {
    if (MPI_Op_create(fns[i], /*commute=*/1, &g_user_ops[i]) != MPI_SUCCESS) {
      throw CommError("init: could not create collie's MPI reduction operations");
    }
  }
}

void free_mpi_types() {
  for (MPI_Datatype& t : g_custom_types) {
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    t = MPI_DATATYPE_NULL;
  }
  for (MPI_Op& op : g_user_ops) {
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
    op = MPI_OP_NULL;
  }
}

MPI_Datatype raw_type(DType dtype) {
  switch (element_size(dtype)) {
    case 1:
      return MPI_UINT8_T;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    default:
      return MPI_UINT64_T;
  }
}

MPI_Datatype reduce_type(DType dtype) {
  if (int i = custom_index(dtype); i >= 0) return g_custom_types[i];
  switch (dtype) {
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;  // custom, above
  }
}

MPI_Op reduce_op(DType dtype, ReduceOp op) {
  if (custom_index(dtype) >= 0) return g_user_ops[op_index(op)];
  switch (op) {
    case ReduceOp::SUM:
      return MPI_SUM;
    case ReduceOp::PROD:
      return MPI_PROD;
    case ReduceOp::MIN:
      return MPI_MIN;
    case ReduceOp::MAX:
      return MPI_MAX;
  }
  return MPI_SUM;
}

}  // namespace collie::detail
