// collie/comm.h — the collective and point-to-point operations (MindSpore comm_func).
//
// Every function takes tensors of any dtype and any strides, never modifies its
// inputs, and returns new contiguous tensors. Ranks named by the caller (dst, src,
// peer) are WORLD ranks; `group` names the group the operation runs in (default:
// the world). N below is the group's size. All members of the group must call a
// collective in the same order with matching arguments; a rank that calls a
// different operation or size gets CommError naming both calls, a peer that dies
// gets CommError naming it, and a peer that never arrives gets TimeoutError after
// the group's deadline (COLLIE_TIMEOUT). After such a failure the group is unusable.
// One exception in timing: in rooted calls (reduce, broadcast,
// gather_into_tensor, scatter_tensor) a rank waits only for the ranks whose data
// it needs. Where the data is staged through shared memory, the ranks that need
// nobody's data (the root of broadcast/scatter, the non-roots of reduce/gather)
// return once their input is copied out, without waiting for the others; where
// the non-roots of broadcast, gather_into_tensor and scatter_tensor read or write
// the root's tensors directly (shared tensors; private ones through CMA), a
// non-root waits only for the root, and the root for every rank. Such a rank
// gets the CommError of a mismatch it did not wait for at a later call on the
// group (at the latest the next one that waits for every rank, or at most 33
// calls later) or from destroy_group/release; COLLIE_DEBUG=detail makes every
// rank wait for every other.
//
// Functions with `async_op` return (output, handle): with async_op=false the
// operation has completed and the handle is empty; with async_op=true the output
// is valid after handle.wait().
//
// Example (4 ranks):
//   auto x = collie::Tensor::ones({2, 8});
//   auto [y, h] = collie::all_reduce(x);                     // y == 4 everywhere
//   auto g = collie::all_gather_into_tensor(x).first;         // shape [8, 8]
//   auto r = collie::reduce(x, /*dst=*/1);                    // rank 1: 4s; others: shape [1]
//   collie::barrier();
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collie/handle.h"
#include "collie/runtime.h"
#include "collie/tensor.h"

namespace collie {

enum class ReduceOp { SUM, PROD, MIN, MAX };

// "sum", "prod", "min", "max"
std::string_view reduce_op_name(ReduceOp op);
// Parses those names; TypeError naming `op_name_for_error` ("For all_reduce, ...") otherwise.
ReduceOp parse_reduce_op(std::string_view name, std::string_view function = "all_reduce");

// Element-wise reduction over the group; every rank gets the result (same shape).
// SUM/PROD/MIN/MAX for every dtype (bool: SUM/MAX = or, PROD/MIN = and); float16 and
// bfloat16 accumulate in float32. Results are bitwise identical on every rank.
std::pair<Tensor, CommHandle> all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM,
                                         std::string_view group = WORLD, bool async_op = false);

// Concatenation along dim 0 in group-rank order: [x1, ...] -> [N*x1, ...]. A 0-d input
// gives [N]. Every rank must pass the same shape.
std::pair<Tensor, CommHandle> all_gather_into_tensor(const Tensor& tensor,
                                                     std::string_view group = WORLD,
                                                     bool async_op = false);

// Reduces over the group, then group rank r keeps rows [r*x1/N, (r+1)*x1/N):
// [x1, ...] -> [x1/N, ...]. ValueError if the input is 0-d or x1 % N != 0.
std::pair<Tensor, CommHandle> reduce_scatter_tensor(const Tensor& tensor,
                                                    ReduceOp op = ReduceOp::SUM,
                                                    std::string_view group = WORLD,
                                                    bool async_op = false);

// Reduces to world rank `dst`, which gets the result (same shape). Every other rank
// gets a shape-[1] tensor of zeros, as MindSpore's comm_func.reduce does.
// RuntimeError if dst is not a member of the group.
Tensor reduce(const Tensor& tensor, int dst, ReduceOp op = ReduceOp::SUM,
              std::string_view group = WORLD);

// World rank `src` splits its tensor along dim 0 into N equal parts; group rank r
// gets part r ([x1, ...] -> [x1/N, ...]). Other ranks pass a tensor of the same shape
// and dtype (values ignored). ValueError if 0-d or x1 % N != 0.
Tensor scatter_tensor(const Tensor& tensor, int src = 0, std::string_view group = WORLD);

// World rank `dst` gets the concatenation along dim 0 in group-rank order
// ([N*x1, ...]); every other rank gets a shape-[1] tensor of zeros.
Tensor gather_into_tensor(const Tensor& tensor, int dst = 0, std::string_view group = WORLD);

// Every rank gets world rank `src`'s tensor (same shape and dtype on all ranks).
Tensor broadcast(const Tensor& tensor, int src = 0, std::string_view group = WORLD);

// Returns once every member of the group has entered the barrier.
void barrier(std::string_view group = WORLD);

// Point-to-point. `dst`/`src` are world ranks and must be members of `group`;
// messages are matched by (source, group, tag) in the order they were sent; a
// receive must name the sender's exact size and dtype (CommError otherwise).
// Sending to oneself is allowed (pair it with an irecv).
// send returns once `tensor` may change again: a message the shared-memory
// engine streams, once it is in the pair's ring; one it has the receiver read
// from the sender's memory (on CPUs that prefer single copies, 16 KiB and up;
// docs/algorithms.md), once the receiver has read it, which a busy receiver
// does soon after it arrived (buffering it: within the time a copy of it takes,
// 1 ms at most, once its engine gets a CPU). isend overlaps that wait.
void send(const Tensor& tensor, int dst = 0, std::string_view group = WORLD, int tag = 0);
// Returns a new tensor with `tensor`'s shape and dtype holding the received data.
Tensor recv(const Tensor& tensor, int src = 0, std::string_view group = WORLD, int tag = 0);
CommHandle isend(const Tensor& tensor, int dst = 0, std::string_view group = WORLD, int tag = 0);
std::pair<Tensor, CommHandle> irecv(const Tensor& tensor, int src = 0,
                                    std::string_view group = WORLD, int tag = 0);

// A group's name as P2POp keeps it: reads like a string (std::string_view, ==,
// str()). The world group's four names (runtime.h) are held as views of the
// library's constants, so making or copying a P2POp of the world group allocates
// nothing (the 18-character "collie_world_group" would not fit in a std::string's
// inline buffer); any other name is owned.
//   collie::GroupName g = "pair";  std::string_view v = g;  g == "pair";  // true
class GroupName {
 public:
  GroupName(std::string_view name = WORLD);  // NOLINT: implicit, like std::string
  GroupName(const char* name) : GroupName(std::string_view(name)) {}         // NOLINT
  GroupName(const std::string& name) : GroupName(std::string_view(name)) {}  // NOLINT

  std::string_view view() const { return constant_.data() ? constant_ : std::string_view(owned_); }
  operator std::string_view() const { return view(); }  // NOLINT
  std::string str() const { return std::string(view()); }
  // The same view (two ops of one group name the world's constant) is equal
  // without comparing characters.
  friend bool operator==(const GroupName& a, std::string_view b) {
    const std::string_view v = a.view();
    return (v.data() == b.data() && v.size() == b.size()) || v == b;
  }

 private:
  std::string_view constant_;  // one of the world's names, else empty (data() null)
  std::string owned_;
};

// One operation of batch_isend_irecv.
struct P2POp {
  enum class Kind { ISEND, IRECV };

  // op is "isend" or "irecv" (ValueError otherwise). For irecv, `tensor` gives
  // the shape and dtype to receive.
  P2POp(std::string_view op, Tensor tensor, int peer, std::string_view group = WORLD, int tag = 0);
  // An irecv described by shape and dtype only (MindSpore: tensor=tuple, recv_dtype=...).
  P2POp(std::string_view op, Shape shape, int peer, std::string_view group, int tag,
        DType recv_dtype);

  // The shape an irecv receives: its template tensor's, or the one it was given.
  const Shape& receive_shape() const { return by_shape ? recv_shape : tensor.shape(); }

  Kind kind;
  Tensor tensor;     // isend: the data; irecv: a template (empty when by shape)
  // An irecv made from a shape: that shape (by_shape). Empty otherwise, an
  // irecv's template included: copying its shape cost every P2POp a malloc.
  Shape recv_shape;
  bool by_shape = false;
  DType recv_dtype;  // irecv: the dtype to receive
  int peer;          // world rank
  GroupName group;
  int tag;
};

// Starts every op at once and waits for all of them. Returns one tensor per op in
// list order: received tensors for irecv, a 0-d float32 zero placeholder for isend.
// Any order of sends and receives completes (no deadlock), whatever the sizes.
// Consecutive ops naming the same group are one call on it (one sequence number,
// one flight-recorder entry: "batch_isend_irecv of N transfers"); an op alone on
// its group is recorded as send/recv. TypeError for an empty list. If a transfer
// fails (a dead peer, a size mismatch, a deadline), its error is raised as soon as
// it is known, naming the transfer ("... (its irecv from rank 1 tag 0): ..."); the
// batch's other transfers carry on in the background, keeping their tensors
// alive, and end on their own.
// The list may be a vector, a braced list (whose ops are not copied) or any
// contiguous range of P2POp.
std::vector<Tensor> batch_isend_irecv(std::span<const P2POp> p2p_op_list);
std::vector<Tensor> batch_isend_irecv(const std::vector<P2POp>& p2p_op_list);
std::vector<Tensor> batch_isend_irecv(std::initializer_list<P2POp> p2p_op_list);

// input_tensor_list[i] goes to group rank i; output i (shape output_shape_list[i])
// comes from group rank i. Lists must have N entries and one dtype (TypeError).
// The sender's and receiver's element counts must agree (CommError otherwise).
// The inputs are read where they lie, not copied together first (a
// non-contiguous one is copied on its own); the outputs are views of one tensor.
std::pair<std::vector<Tensor>, CommHandle> all_to_all_with_output_shape(
    const std::vector<Shape>& output_shape_list, const std::vector<Tensor>& input_tensor_list,
    std::string_view group = WORLD, bool async_op = false);

// Splits `tensor` along dim 0 by input_split_sizes (empty = N equal parts) and sends
// part i to group rank i; concatenates what arrives (rows per rank output_split_sizes,
// empty = N equal parts of output_shape[0]) into shape (-1, output_shape[1:]).
// Split sizes come from the INPUT tensor's own shape (MindSpore 2.5+ wrongly uses
// output_shape). ValueError for indivisible sizes or lists of the wrong length/sum.
std::pair<Tensor, CommHandle> all_to_all_single_with_output_shape(
    const Shape& output_shape, const Tensor& tensor,
    const std::vector<int64_t>& output_split_sizes = {},
    const std::vector<int64_t>& input_split_sizes = {}, std::string_view group = WORLD,
    bool async_op = false);

// send_count_matrix[i*N + j] = rows (along dim 0) group rank i sends to group rank j,
// the same matrix on every rank. Rows are written into `output` (contiguous, with
// enough rows: ValueError otherwise). TypeError if the matrix is not N*N, ValueError
// if input and output differ in row size or dtype.
CommHandle all_to_all_v_c(Tensor& output, const Tensor& input,
                          const std::vector<int64_t>& send_count_matrix,
                          std::string_view group = WORLD, bool async_op = false);

}  // namespace collie
