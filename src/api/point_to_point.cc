// send/recv/isend/irecv, P2POp and batch_isend_irecv (collie/comm.h).
#include <array>
#include <exception>
#include <span>
#include <string>

#include "api/api_common.h"

namespace collie {

using collie::WorkPtr;
using detail::Backend;
using detail::Group;
using detail::OpKind;

namespace {

// MindSpore looks p2p ranks up in a per-group dictionary and raises KeyError when
// the rank is missing; collie keeps the exception type (with a clearer message).
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

detail::OpInfo p2p_info(OpKind kind, const Tensor& t, int peer, int tag, bool blocking) {
  detail::OpInfo info =
      detail::op_info(kind, t, static_cast<uint64_t>(t.numel()), ReduceOp::SUM, -1, blocking);
  info.root = peer;
  info.tag = tag;
  return info;
}

// `peer` is a group rank (already checked).
WorkPtr start_send(Group& g, const Tensor& tensor, int peer, int tag, bool blocking) {
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  return g.submit(
      p2p_info(OpKind::Send, in, peer, tag, blocking), {&in}, [&](Backend& b, const WorkPtr& w) {
        // The copy is this call's own: whatever the Work keeps for a
        // blocking call, it must keep the copy (the message may move
        // after this function returned: a ring that is full).
        if (in_copy && w->info().blocking) w->keep_alive(*in_copy);
        b.send(w, in.data_ptr(), static_cast<size_t>(in.numel()), in.dtype(), peer, tag);
      });
}

std::pair<Tensor, WorkPtr> start_recv(Group& g, const Shape& shape, DType dtype, int peer, int tag,
                                      bool blocking) {
  Tensor out = Tensor::uninitialized(shape, dtype);
  WorkPtr w =
      g.submit(p2p_info(OpKind::Recv, out, peer, tag, blocking), {&out},
               [&](Backend& b, const WorkPtr& work) {
                 b.recv(work, out.data_ptr(), static_cast<size_t>(out.numel()), dtype, peer, tag);
               });
  return {std::move(out), std::move(w)};
}

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

std::vector<Tensor> batch_isend_irecv(const std::vector<P2POp>& p2p_op_list) {
  return batch_isend_irecv(std::span<const P2POp>(p2p_op_list));
}

std::vector<Tensor> batch_isend_irecv(std::initializer_list<P2POp> p2p_op_list) {
  return batch_isend_irecv(std::span<const P2POp>(p2p_op_list.begin(), p2p_op_list.size()));
}

std::vector<Tensor> batch_isend_irecv(std::span<const P2POp> p2p_op_list) {
  if (p2p_op_list.empty())
    throw TypeError("For batch_isend_irecv, p2p_op_list can not be empty list.");
  // Check every op before starting any: a bad op in the middle must not leave
  // earlier receives waiting for messages that will never come.
  struct Transfer {
    // The group is held once per run of ops naming it (`owner`); the others
    // point to it (each reference held is two atomic read-modify-writes).
    std::shared_ptr<Group> owner;
    Group* group = nullptr;
    int peer = -1;  // group rank
    WorkPtr work;
  };
  // A batch is usually a few ops (a send and a receive per neighbour): that many
  // transfers live on the stack, so the batch itself allocates only its results.
  constexpr size_t kInlineTransfers = 8;
  std::array<Transfer, kInlineTransfers> inline_transfers;
  std::vector<Transfer> heap_transfers;
  if (p2p_op_list.size() > kInlineTransfers) heap_transfers.resize(p2p_op_list.size());
  const std::span<Transfer> transfers =
      heap_transfers.empty() ? std::span<Transfer>(inline_transfers.data(), p2p_op_list.size())
                             : std::span<Transfer>(heap_transfers);
  for (size_t i = 0; i < p2p_op_list.size(); ++i) {
    const P2POp& op = p2p_op_list[i];
    // Ops naming the group the op before named share its lookup.
    if (i > 0 && op.group == p2p_op_list[i - 1].group.view()) {
      transfers[i].group = transfers[i - 1].group;
    } else {
      transfers[i].owner = detail::lookup_for_op(op.group, "batch_isend_irecv");
      transfers[i].group = transfers[i].owner.get();
    }
    transfers[i].peer = peer_rank(*transfers[i].group, op.peer, "batch_isend_irecv",
                                  op.kind == P2POp::Kind::ISEND ? "dst" : "src");
  }
  std::vector<Tensor> results;
  results.reserve(p2p_op_list.size());
  std::exception_ptr first_error;
  // Start everything before waiting on anything: that is what makes any order of
  // sends and receives safe.
  for (size_t i = 0; i < p2p_op_list.size(); ++i) {
    const P2POp& op = p2p_op_list[i];
    Transfer& t = transfers[i];
    try {
      if (op.kind == P2POp::Kind::ISEND) {
        t.work = start_send(*t.group, op.tensor, t.peer, op.tag, true);
        results.push_back(Tensor::zeros({}));  // zero-filled storage: no per-dtype fill
      } else {
        auto [out, w] =
            start_recv(*t.group, op.receive_shape(), op.recv_dtype, t.peer, op.tag, true);
        t.work = std::move(w);
        results.push_back(std::move(out));
      }
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
      break;
    }
  }
  // Wait for the transfers in order, until one fails: its error is raised at
  // once. The others carry on in the background (the engine progresses them to
  // completion or to their own error) and keep their tensors alive meanwhile, so a
  // rank whose peer died hears of it when that is detected, not only after its
  // exchanges with every live peer are done (seconds for large ones on a loaded
  // machine).
  for (size_t i = 0; i < transfers.size() && transfers[i].work; ++i) {
    const WorkPtr& work = transfers[i].work;
    if (first_error) {
      work->keep_alive(p2p_op_list[i].tensor);
      if (i < results.size()) work->keep_alive(results[i]);
      continue;
    }
    try {
      work->wait();
    } catch (...) {
      first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace collie
