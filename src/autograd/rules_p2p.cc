// Rules of point-to-point ops: send <-> recv, batch_isend_irecv, NeighborExchange and the
// V2 halo exchange. Every edge is reversed, and gradient messages use their own tags
// (tags.h) so they never match forward traffic of this or the next step.
#include <string>

#include "autograd/exchange.h"
#include "autograd/rule_util.h"
#include "autograd/rules.h"
#include "autograd/tags.h"
#include "autograd/tensor_math.h"
#include "collie/errors.h"

namespace collie::autograd::detail {

int grad_tag(int tag, const char* op) {
  if (tag < 0 || tag >= kMaxDifferentiableTag) {
    throw ValueError(std::string(op) + ": a differentiable point-to-point tag must be in [0, " +
                     std::to_string(kMaxDifferentiableTag) + "), got " + std::to_string(tag) +
                     " (larger tags carry collie's own gradient traffic)");
  }
  return kGradTagBase + tag;
}

// send's adjoint: receive x's cotangent from the rank the data went to. The send's own
// output is a placeholder; its cotangent is ignored.
Bprop::Fn make_send(const AttrReader& a) {
  const std::string group = a.group();
  const int dst = a.get_rank_like("dst", 0);
  const int tag = grad_tag(a.get_rank_like("tag", 0), "send");
  return
      [group, dst, tag](const TensorList& x, const TensorList&, const TensorList&) -> TensorList {
        const Tensor& x0 = one(x, "send", "x");
        require_floating(x0, "send");
        return {collie::recv(zeros_like(x0), dst, group, tag)};
      };
}

// recv's adjoint: send the cotangent back to the source. The receive's template input
// (shape and dtype only) gets zeros; x may be empty when there is none.
Bprop::Fn make_recv(const AttrReader& a) {
  const std::string group = a.group();
  const int src = a.get_rank_like("src", 0);
  const int tag = grad_tag(a.get_rank_like("tag", 0), "recv");
  return [group, src, tag](const TensorList& x, const TensorList&,
                           const TensorList& dout) -> TensorList {
    const Tensor& dy = one(dout, "recv", "dout");
    require_floating(dy, "recv");
    collie::send(dy, src, group, tag);
    if (x.empty()) return {};
    return {zeros_like(x[0])};
  };
}

// One reversed op per forward op: an isend becomes an irecv of its data's cotangent, an
// irecv becomes an isend of the received tensor's cotangent. Everything starts at once
// (batch_isend_irecv), so any pattern of exchanges completes.
Bprop::Fn make_batch_isend_irecv(const AttrReader& a) {
  const std::string group = a.group();
  const auto kinds = a.get_strings("ops");
  const auto peers = a.get_ints("peers");
  auto tags = a.get_ints("tags", std::vector<int64_t>(kinds.size(), 0));
  if (peers.size() != kinds.size() || tags.size() != kinds.size()) {
    throw ValueError(
        "get_bprop(\"batch_isend_irecv\"): ops, peers and tags need the same length, got " +
        std::to_string(kinds.size()) + ", " + std::to_string(peers.size()) + ", " +
        std::to_string(tags.size()));
  }
  std::vector<bool> is_send;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] != "isend" && kinds[i] != "irecv") {
      throw ValueError("get_bprop(\"batch_isend_irecv\"): ops[" + std::to_string(i) +
                       "] must be \"isend\" or \"irecv\", got \"" + kinds[i] + "\"");
    }
    is_send.push_back(kinds[i] == "isend");
    tags[i] = grad_tag(static_cast<int>(tags[i]), "batch_isend_irecv");
  }
  return [group, is_send, peers, tags](const TensorList& x, const TensorList&,
                                       const TensorList& dout) -> TensorList {
    expect_size(x, is_send.size(), "batch_isend_irecv", "x (one per op)");
    expect_size(dout, is_send.size(), "batch_isend_irecv", "dout (one per op)");
    std::vector<P2POp> ops;
    for (size_t i = 0; i < is_send.size(); ++i) {
      const int peer = static_cast<int>(peers[i]), tag = static_cast<int>(tags[i]);
      if (is_send[i]) {
        require_floating(x[i], "batch_isend_irecv");
        ops.emplace_back("irecv", x[i].shape(), peer, group, tag, x[i].dtype());
      } else {
        require_floating(dout[i], "batch_isend_irecv");
        ops.emplace_back("isend", dout[i], peer, group, tag);
      }
    }
    if (ops.empty()) return {};
    TensorList back = collie::batch_isend_irecv(ops);
    TensorList dx;
    for (size_t i = 0; i < is_send.size(); ++i)
      dx.push_back(is_send[i] ? back[i] : zeros_like(x[i]));
    return dx;
  };
}

// NeighborExchange's adjoint: the same exchange with send and receive lists swapped; the
// cotangents of what was received go back, and arrive with the shapes that were sent.
Bprop::Fn make_neighbor_exchange(const AttrReader& a) {
  const std::string group = a.group();
  std::vector<int> send_ids, recv_ids;
  for (int64_t r : a.get_ints("send_rank_ids")) send_ids.push_back(static_cast<int>(r));
  for (int64_t r : a.get_ints("recv_rank_ids")) recv_ids.push_back(static_cast<int>(r));
  const auto recv_shapes = a.get_shapes("recv_shapes");
  const auto send_shapes = a.get_shapes("send_shapes", std::vector<Shape>{});
  if (recv_shapes.size() != recv_ids.size()) {
    throw ValueError(
        "get_bprop(\"neighbor_exchange\"): recv_shapes and recv_rank_ids differ in length");
  }
  return [group, send_ids, recv_ids, send_shapes](const TensorList& x, const TensorList&,
                                                  const TensorList& dout) -> TensorList {
    expect_size(dout, recv_ids.size(), "neighbor_exchange", "dout (one per received tensor)");
    std::vector<Shape> shapes = send_shapes;
    if (!x.empty() || shapes.empty()) {
      expect_size(x, send_ids.size(), "neighbor_exchange", "x (one per sent tensor)");
      shapes.clear();
      for (const Tensor& t : x) shapes.push_back(t.shape());
    }
    if (shapes.size() != send_ids.size()) {
      throw ValueError(
          "bprop of neighbor_exchange: send_shapes and send_rank_ids differ in length");
    }
    for (const Tensor& t : dout) require_floating(t, "neighbor_exchange");
    const DType dtype =
        !dout.empty() ? dout[0].dtype() : (!x.empty() ? x[0].dtype() : DType::Float32);
    return exchange_lists(dout, recv_ids, send_ids, shapes, group, dtype, kNeighborGradTag);
  };
}

Bprop::Fn make_neighbor_exchange_v2(const AttrReader& a) {
  const std::string group = a.group();
  HaloSpec spec;
  for (int64_t r : a.get_ints("send_rank_ids")) spec.send_rank_ids.push_back(static_cast<int>(r));
  for (int64_t r : a.get_ints("recv_rank_ids")) spec.recv_rank_ids.push_back(static_cast<int>(r));
  spec.send_lens = a.get_ints("send_lens");
  spec.recv_lens = a.get_ints("recv_lens");
  const std::string format = a.get_string("data_format", std::string("NCHW"));
  if (format != "NCHW") {
    throw ValueError("get_bprop(\"neighbor_exchange_v2\"): data_format must be \"NCHW\", got \"" +
                     format + "\"");
  }
  return [group, spec](const TensorList&, const TensorList&, const TensorList& dout) -> TensorList {
    const Tensor& dy = one(dout, "neighbor_exchange_v2", "dout");
    require_floating(dy, "neighbor_exchange_v2");
    return {neighbor_exchange_v2_grad(dy, spec, group)};
  };
}

}  // namespace collie::autograd::detail
