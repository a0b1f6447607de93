// collie/comm_ext.h — communication operations beyond comm_func that gradients need.
//
// MindSpore's gradient rules use operations that comm_func does not offer: AlltoAll
// with split/concat dimensions, AlltoAllV on flat element counts, NeighborExchange
// and its 2-D halo form NeighborExchangeV2, and (for sparse row gradients) gathers of
// uneven sizes. collie builds them here on the public comm API (collie/comm.h), so they
// run on every backend. Ranks named in arguments are WORLD ranks and must be members of
// `group`, as in comm.h; every member of the group must call a collective one (the
// neighbour exchanges are collective only among the ranks that exchange).
//
// Point-to-point tags: the neighbour exchanges and the gradient rules of send/recv use
// tags from kReservedTagBase (2^30) up, so their messages never match a user's message
// or each other. User code should keep its own tags below kReservedTagBase (and below
// autograd::kMaxDifferentiableTag = 2^29 for differentiable send/recv, whose gradients
// travel on kReservedTagBase + tag).
//
// Example (2 ranks; each sends its single row to the other and gets the other's):
//   int peer = 1 - collie::get_rank();
//   auto got = collie::neighbor_exchange({x}, {peer}, {peer}, {x.shape()});   // got[0]
//   auto t = collie::all_to_all(y, /*split_dim=*/1, /*concat_dim=*/0);        // y: [a, 2b] -> [2a,
//   b] auto all = collie::all_gather_v(rows);    // row counts may differ per rank
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "collie/comm.h"
#include "collie/runtime.h"
#include "collie/tensor.h"

namespace collie {

// Tags at or above this value are reserved for collie's own point-to-point traffic.
inline constexpr int kReservedTagBase = 1 << 30;

// MindSpore ops.AlltoAll: splits `tensor` along `split_dim` into N equal blocks (N = group
// size), sends block j to group rank j, and concatenates the N received blocks along
// `concat_dim` in group-rank order. Every rank must pass the same shape.
// [.., s, .., c, ..] -> [.., s/N, .., c*N, ..] (one dim when split_dim == concat_dim).
// ValueError: a dim out of range, or size(split_dim) % N != 0.
Tensor all_to_all(const Tensor& tensor, int64_t split_dim, int64_t concat_dim,
                  std::string_view group = WORLD);

// MindSpore ops.AlltoAllV on flat element counts: the tensor is read as 1-D;
// send_numel_list[j] elements (consecutive, in rank order) go to group rank j, and
// recv_numel_list[j] elements come from group rank j. Returns a 1-D tensor of
// sum(recv_numel_list) elements. ValueError: wrong list lengths, negative counts, or
// sum(send_numel_list) != numel.
Tensor all_to_all_v(const Tensor& tensor, const std::vector<int64_t>& send_numel_list,
                    const std::vector<int64_t>& recv_numel_list, std::string_view group = WORLD);

// all_gather along dim 0 where each rank may contribute a different number of rows (zero
// included); all dims but 0 and the dtype must agree. Result: [sum of rows, ...] in
// group-rank order. If `rows_per_rank` is given it receives every rank's row count.
// (One small all_gather of the counts, then one all-to-all.)
Tensor all_gather_v(const Tensor& tensor, std::string_view group = WORLD,
                    std::vector<int64_t>* rows_per_rank = nullptr);

// The adjoint of all_gather_v: `tensor` has sum(rows_per_rank) rows on every rank; group
// rank r gets the element-wise SUM over ranks of rows [offset_r, offset_r + rows_per_rank[r]).
// Floating dtypes (TypeError otherwise). ValueError: wrong list length, negative counts, or
// rows != sum(rows_per_rank).
Tensor reduce_scatter_v(const Tensor& tensor, const std::vector<int64_t>& rows_per_rank,
                        std::string_view group = WORLD);

// MindSpore ops.NeighborExchange: sends inputs[i] to world rank send_rank_ids[i] and
// receives recv_shapes[i] (dtype `recv_type`, or the inputs' dtype when there are inputs)
// from world rank recv_rank_ids[i]. Returns the received tensors in recv order. Messages
// between a pair of ranks are matched in list order. Only the ranks named here take
// part. ValueError: inputs and send_rank_ids (or recv ids and shapes) differ in length.
std::vector<Tensor> neighbor_exchange(const std::vector<Tensor>& inputs,
                                      const std::vector<int>& send_rank_ids,
                                      const std::vector<int>& recv_rank_ids,
                                      const std::vector<Shape>& recv_shapes,
                                      std::string_view group = WORLD,
                                      DType recv_type = DType::Float32);

// MindSpore ops.NeighborExchangeV2: a halo exchange of an NCHW tensor with up to 8
// neighbours. Directions are indexed 0..7 = top, top_right, right, bottom_right, bottom,
// bottom_left, left, top_left; -1 = no neighbour. Lens are [top, bottom, left, right].
struct HaloSpec {
  std::vector<int> send_rank_ids;  // 8 world ranks or -1
  std::vector<int64_t> send_lens;  // 4: rows/cols of x sent in each direction
  std::vector<int> recv_rank_ids;  // 8 world ranks or -1
  std::vector<int64_t> recv_lens;  // 4: rows/cols of halo received on each side
};

// Output: (N, C, H + recv_top + recv_bottom, W + recv_left + recv_right) with x in the
// centre and each halo region holding what that direction's neighbour sent (its edge
// rows/columns/corner); regions whose neighbour is -1 are zero. What is sent in direction
// d is x's edge slice of width send_lens (corners: send_top/bottom x send_left/right).
// The neighbour must send exactly the halo this rank expects (CommError otherwise).
// ValueError: x not 4-D, lists of the wrong length, ids < -1, repeated ids (as
// MindSpore), negative lens, lens larger than H or W.
Tensor neighbor_exchange_v2(const Tensor& x, const HaloSpec& spec, std::string_view group = WORLD);

// The adjoint of neighbor_exchange_v2 with the same `spec` (MindSpore's
// NeighborExchangeV2Grad, with the spec as given to the forward op): `dy` has the
// forward output's shape; returns dx of the forward input's shape = the centre of dy plus,
// added into each edge slice that was sent, the halo cotangent that the receiving
// neighbour sends back.
Tensor neighbor_exchange_v2_grad(const Tensor& dy, const HaloSpec& spec,
                                 std::string_view group = WORLD);

// A row-sparse tensor (MindSpore RowTensor): rows `indices` (int64, [nnz]) of a dense
// tensor of shape `dense_shape` hold `values` ([nnz, dense_shape[1:]...]); other rows are
// zero. Indices may repeat; repeated rows add.
struct RowTensor {
  Tensor indices;
  Tensor values;
  Shape dense_shape;
};

// The dense tensor (repeated rows added). ValueError for indices out of range.
Tensor to_dense(const RowTensor& rows);
// Sorted unique indices, values of repeated indices summed.
RowTensor coalesce(const RowTensor& rows);
// The SUM over the group of every rank's row-sparse tensor, as a coalesced RowTensor on
// every rank. Each rank may hold a different number of rows (all_gather_v); MindSpore's
// rule gathers with a plain AllGather and so requires equal nnz everywhere.
RowTensor all_reduce_rows(const RowTensor& rows, std::string_view group = WORLD);

}  // namespace collie
