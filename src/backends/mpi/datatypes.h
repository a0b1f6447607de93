// How collie's dtypes and reductions travel through MPI.
//
// Data movement (gather, broadcast, all_to_all, p2p, ...) uses an unsigned integer
// type of the element's width, so every bit pattern (NaN payloads included) arrives
// unchanged. Reductions take one of two routes, chosen per dtype by the reduction
// mode (COLLIE_MPI_REDUCTION):
//   native   MPI reduces (MPI_Iallreduce, ...) with its own algorithms. int32/int64
//            and float32/float64 use MPI's types and ops; bool, int8, uint8, int16,
//            float16 and bfloat16 use a contiguous 1- or 2-byte type and a user
//            MPI_Op that combines each PAIR with collie's kernels (16-bit floats:
//            fp32 arithmetic rounded after every pair, in an order MPI chooses).
//            Small integers avoid MPI's ops because Open MPI 4.1's AVX reductions
//            saturate 8/16-bit sums instead of wrapping (open-mpi/ompi#8045).
//   ordered  each rank receives all inputs of its share and reduces them locally
//            with reduce_n in rank order (fp32 accumulation, one rounding), exactly
//            as the shm backend does: results are bit-identical to shm's and the
//            same on every rank.
// The default mode, auto, is native for int32/int64 (whose wrapping sums, products,
// min and max do not depend on the order) and ordered for everything else.
#pragma once

#include <mpi.h>

#include <string>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::detail {

enum class ReductionMode { Auto, Native, Ordered };

// From COLLIE_MPI_REDUCTION (auto | native | ordered; default auto). ValueError otherwise.
ReductionMode reduction_mode_from_env();
const char* reduction_mode_name(ReductionMode mode);

// True when reductions of `dtype` go through MPI's reduction operations.
bool reduces_natively(ReductionMode mode, DType dtype);

// Creates the custom datatypes and user ops. Progress thread, once, after MPI_Init.
void init_mpi_types();
// Frees them (before MPI_Finalize).
void free_mpi_types();

// An unsigned integer type as wide as one element: for moving data only.
MPI_Datatype raw_type(DType dtype);
// The type and op for a native reduction (valid after init_mpi_types).
MPI_Datatype reduce_type(DType dtype);
MPI_Op reduce_op(DType dtype, ReduceOp op);

}  // namespace collie::detail
