#include "runtime/op_info.h"

#include <cstdio>

namespace collie::detail {

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

std::string format_seconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", seconds);
  return buf;
}

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::AllReduce:
      return "all_reduce";
    case OpKind::AllGather:
      return "all_gather_into_tensor";
    case OpKind::ReduceScatter:
      return "reduce_scatter_tensor";
    case OpKind::Reduce:
      return "reduce";
    case OpKind::Broadcast:
      return "broadcast";
    case OpKind::Gather:
      return "gather_into_tensor";
    case OpKind::Scatter:
      return "scatter_tensor";
    case OpKind::Barrier:
      return "barrier";
    case OpKind::AllToAll:
      return "all_to_all";
    case OpKind::Send:
      return "send";
    case OpKind::Recv:
      return "recv";
    case OpKind::BatchP2P:
      return "batch_isend_irecv";
  }
  return "unknown_op";
}

uint64_t OpInfo::pack_identity() const {
  return static_cast<uint64_t>(kind) | static_cast<uint64_t>(dtype) << 8 |
         static_cast<uint64_t>(reduce_op) << 16 |
         static_cast<uint64_t>(static_cast<uint32_t>(root + 1)) << 32;
}

void OpInfo::unpack_identity(uint64_t word) {
  kind = static_cast<OpKind>(word & 0xff);
  const auto d = (word >> 8) & 0xff;
  dtype = d < kNumDTypes ? static_cast<DType>(d) : DType::Float32;  // words from peers too
  reduce_op = static_cast<ReduceOp>((word >> 16) & 0xff);
  root = static_cast<int>(static_cast<uint32_t>(word >> 32)) - 1;
}

std::string OpInfo::describe() const {
  return describe_call() + " on group '" + (group ? *group : std::string()) + "' seq " +
         std::to_string(seq);
}

std::string OpInfo::describe_transfer(bool is_send, int world_peer, int64_t tag) const {
  if (kind != OpKind::BatchP2P) return describe();
  return describe() + " (its " + (is_send ? "isend to" : "irecv from") + " rank " +
         std::to_string(world_peer) + " tag " + std::to_string(tag) + ")";
}

std::string OpInfo::describe_call() const {
  std::string s = op_kind_name(kind);
  bool reduces =
      kind == OpKind::AllReduce || kind == OpKind::ReduceScatter || kind == OpKind::Reduce;
  if (reduces) s += "(" + std::string(reduce_op_name(reduce_op)) + ")";
  if (kind == OpKind::BatchP2P) return s + " of " + std::to_string(count) + " transfers";
  if (kind != OpKind::Barrier) {
    s += " " + std::string(dtype_name(dtype)) + " x" + std::to_string(count);
  }
  if (root >= 0) {
    s += (kind == OpKind::Send || kind == OpKind::Recv) ? " peer " : " root ";
    s += std::to_string(root) + " (group rank)";
  }
  if (kind == OpKind::Send || kind == OpKind::Recv) s += " tag " + std::to_string(tag);
  return s;
}

}  // namespace collie::detail
