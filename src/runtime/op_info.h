// OpInfo: what an operation is, for error messages, fingerprints and the flight recorder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::detail {

enum class OpKind : uint8_t {
  AllReduce = 1,
  AllGather,
  ReduceScatter,
  Reduce,
  Broadcast,
  Gather,
  Scatter,
  Barrier,
  AllToAll,
  Send,
  Recv,
  // Several sends and receives of one batch_isend_irecv on one group, one Work
  // (Work::expect_parts); `count` is how many.
  BatchP2P,
};

const char* op_kind_name(OpKind kind);

// "2 s", "0.5 s": seconds for messages, without trailing zeros.
std::string format_seconds(double seconds);

// "[3, 1]": a rank list for messages.
std::string rank_list(const std::vector<int>& ranks);

// (FlightRecorder::issued packs every field but `group` into its entry: keep it in step.)
struct OpInfo {
  OpKind kind = OpKind::Barrier;
  // The group's name as the user knows it; shared with the Group, so stamping it
  // on every call costs no allocation.
  std::shared_ptr<const std::string> group;
  uint64_t seq = 0;    // per-group sequence number, stamped at the choke point
  uint64_t count = 0;  // elements per rank (0 where it varies by rank)
  DType dtype = DType::Float32;
  ReduceOp reduce_op = ReduceOp::SUM;
  int root = -1;          // group rank of the root / peer, -1 if none
  int tag = 0;            // p2p only
  bool blocking = false;  // the caller waits at once (it can drive progress itself)

  // "all_reduce(sum) float32 x1024 on group 'g' seq 7"
  std::string describe() const;
  // The call alone, without group and seq: "all_reduce(sum) float32 x1024"
  std::string describe_call() const;
  // describe() for one transfer of the call, with world rank `world_peer`: a
  // transfer of a batch shares its Work (and so this OpInfo) with the batch's
  // others, so it says which one: "batch_isend_irecv of 4 transfers on group 'g'
  // seq 7 (its isend to rank 1 tag 0)". Other calls: describe().
  std::string describe_transfer(bool is_send, int world_peer, int64_t tag) const;

  // kind | dtype << 8 | reduce op << 16 | (root + 1) << 32 in one word, as step
  // fingerprints and flight-recorder entries store it (bits 24-31 are left to
  // them); unpack_identity() sets those four fields back.
  uint64_t pack_identity() const;
  void unpack_identity(uint64_t word);
};

}  // namespace collie::detail
