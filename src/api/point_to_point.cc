// send/recv/isend/irecv and P2POp (collie/comm.h); batch_isend_irecv is in
// batch_isend_irecv.cc.
#include <optional>
#include <string>

#include "api/p2p_start.h"

namespace collie {

using collie::WorkPtr;
using detail::Backend;
using detail::Group;
using detail::OpKind;

namespace detail {

int peer_rank(const Group& g, int world_rank, std::string_view op, std::string_view what) {
  int r = g.group_rank_of(world_rank);
  if (r < 0) {
    std::string ranks;
    for (int w : g.world_ranks()) ranks += (ranks.empty() ? "" : ", ") + std::to_string(w);
    throw KeyError("For " + std::string(op) + ", " + std::string(what) + " " +
                   std::to_string(world_rank) + " is not a member of group '" + g.name() + "' [" +
                   ranks + "] (ranks are world ranks)");
  }
  return r;
}

namespace {
OpInfo p2p_info(OpKind kind, const Tensor& t, int peer, int tag, bool blocking) {
  OpInfo info = op_info(kind, t, static_cast<uint64_t>(t.numel()), ReduceOp::SUM, -1, blocking);
  info.root = peer;
  info.tag = tag;
  return info;
}
}  // namespace

WorkPtr start_send(Group& g, const Tensor& tensor, int peer, int tag, bool blocking) {
  std::optional<Tensor> in_copy;
  const Tensor& in = contiguous_ref(tensor, in_copy);
  return g.submit(
      p2p_info(OpKind::Send, in, peer, tag, blocking), {&in}, [&](Backend& b, const WorkPtr& w) {
        // The copy is this call's own: whatever the Work keeps for a
        // blocking call, it must keep the copy (the message may move
        // after this function returned: a ring that is full).
        if (in_copy && w->info().blocking) w->keep_alive(*in_copy);
        b.send(w, in.data_ptr(), static_cast<size_t>(in.numel()), in.dtype(), peer, tag);
      });
}

WorkPtr start_recv_into(Group& g, const Tensor& out, int peer, int tag, bool blocking) {
  return g.submit(
      p2p_info(OpKind::Recv, out, peer, tag, blocking), {&out}, [&](Backend& b, const WorkPtr& w) {
        b.recv(w, out.data_ptr(), static_cast<size_t>(out.numel()), out.dtype(), peer, tag);
      });
}

std::pair<Tensor, WorkPtr> start_recv(Group& g, const Shape& shape, DType dtype, int peer, int tag,
                                      bool blocking) {
  Tensor out = Tensor::uninitialized(shape, dtype);
  WorkPtr w = start_recv_into(g, out, peer, tag, blocking);
  return {std::move(out), std::move(w)};
}

}  // namespace detail

namespace {

using detail::peer_rank;
using detail::start_recv;
using detail::start_send;

WorkPtr start_send(const Tensor& tensor, int dst, std::string_view group, int tag, const char* op,
                   bool blocking) {
  auto g = detail::lookup_for_op(group, op);
  return start_send(*g, tensor, peer_rank(*g, dst, op, "dst"), tag, blocking);
}

std::pair<Tensor, WorkPtr> start_recv(const Shape& shape, DType dtype, int src,
                                      std::string_view group, int tag, const char* op,
                                      bool blocking) {
  auto g = detail::lookup_for_op(group, op);
  return start_recv(*g, shape, dtype, peer_rank(*g, src, op, "src"), tag, blocking);
}

P2POp::Kind parse_kind(std::string_view op) {
  if (op == "isend") return P2POp::Kind::ISEND;
  if (op == "irecv") return P2POp::Kind::IRECV;
  throw ValueError("For P2POp, expected ``op`` to be of type ``isend`` or ``irecv``, but got " +
                   std::string(op));
}

}  // namespace

void send(const Tensor& tensor, int dst, std::string_view group, int tag) {
  start_send(tensor, dst, group, tag, "send", true)->wait();
}

CommHandle isend(const Tensor& tensor, int dst, std::string_view group, int tag) {
  return CommHandle(start_send(tensor, dst, group, tag, "isend", false));
}

Tensor recv(const Tensor& tensor, int src, std::string_view group, int tag) {
  auto [out, w] = start_recv(tensor.shape(), tensor.dtype(), src, group, tag, "recv", true);
  w->wait();
  return out;
}

std::pair<Tensor, CommHandle> irecv(const Tensor& tensor, int src, std::string_view group,
                                    int tag) {
  auto [out, w] = start_recv(tensor.shape(), tensor.dtype(), src, group, tag, "irecv", false);
  return {out, CommHandle(w)};
}

GroupName::GroupName(std::string_view name) {
  // Most ops name the world by the default argument, the very same characters:
  // no comparison needed.
  if (name.data() == WORLD.data() && name.size() == WORLD.size()) {
    constant_ = WORLD;
    return;
  }
  for (std::string_view world :
       {WORLD, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP}) {
    if (name == world) {
      constant_ = world;
      return;
    }
  }
  owned_.assign(name);
}

P2POp::P2POp(std::string_view op, Tensor t, int peer_rank, std::string_view group_name,
             int tag_value)
    : kind(parse_kind(op)),
      tensor(std::move(t)),
      recv_dtype(tensor.dtype()),
      peer(peer_rank),
      group(group_name),
      tag(tag_value) {}

P2POp::P2POp(std::string_view op, Shape shape, int peer_rank, std::string_view group_name,
             int tag_value, DType dtype)
    : kind(parse_kind(op)),
      recv_shape(std::move(shape)),
      by_shape(true),
      recv_dtype(dtype),
      peer(peer_rank),
      group(group_name),
      tag(tag_value) {
  if (kind == Kind::ISEND) {
    throw ValueError("P2POp: an isend needs a tensor to send, not a shape " +
                     shape_to_string(recv_shape));
  }
}

}  // namespace collie
