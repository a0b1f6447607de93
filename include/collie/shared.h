// collie/shared.h — tensors in shared memory, for single-copy collectives.
//
// A tensor from empty_shared() lives in this rank's shared arena, which every
// other rank of the job can map. When every rank of a collective passes such a
// tensor, the shm backend skips the staging copies: each rank reads its peers'
// inputs and writes their outputs in place (docs/algorithms.md, "Shared
// tensors"). The results of such a call are shared tensors too, so a chain of
// collectives stays on the fast path. Point-to-point needs no agreement: a send
// of a shared tensor (or a view of one) of 8 KiB or more is read by its receiver
// straight from the sender's tensor, whatever the receiving tensor is.
//
// Example (run with `collie run -n 4 ./prog`):
//   collie::init();
//   collie::Tensor x = collie::empty_shared({1 << 24});   // 64 MiB of float32
//   x.copy_from(collie::Tensor::ones({1 << 24}));          // contents start unspecified
//   auto [y, h] = collie::all_reduce(x);                   // y: shared, every element 4
//
// Rules:
//   - Every rank of a call passes shared tensors, or none does. Mixing them is a
//     mismatched call: every rank raises CommError naming who passed what.
//     (Calls under 16 KiB per rank take the staged path either way.)
//     all_to_all_with_output_shape's input list counts as shared when every
//     tensor in it is, whether they are pieces of one shared tensor (split()) or
//     separate ones: each is read where it lies.
//   - The contents of a new shared tensor are unspecified, as with numpy.empty.
//   - Memory comes from /dev/shm in chunks (COLLIE_SHARED_CHUNK_BYTES, default
//     64 MiB, or the request if larger), reused after tensors are freed, and
//     returned at release(). CommError names needed vs free bytes when /dev/shm
//     is too small (docker: --shm-size).
//   - Tensors stay valid after release(); they are ordinary memory from then on.
//   - On backends without shared memory (mpi) empty_shared() returns an
//     ordinary tensor and everything works, without the single-copy path.
#pragma once

#include "collie/tensor.h"

namespace collie {

// A contiguous tensor in this rank's shared arena. RuntimeError before init().
Tensor empty_shared(const Shape& shape, DType dtype = DType::Float32);

// True when `t`'s elements lie in this rank's shared arena (a contiguous view of
// a shared tensor counts too).
bool is_shared(const Tensor& t);

}  // namespace collie
