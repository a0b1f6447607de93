// ShmGroup: one group's shared-memory segments, mapped in this process.
//
// Construction is the rendezvous: this rank creates its own segment, maps every
// peer's segment as it appears, announces that it has mapped them all, waits for
// every peer to say the same, and then unlinks its own segment's name. Every wait
// in it has the group's deadline and checks that peers are alive.
//
// After construction the object is used only by the progress engine's thread
// (the step counter, the queue and the failure state are not synchronised).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "backends/shm/copy_rules.h"
#include "backends/shm/layout.h"
#include "backends/shm/segment.h"

namespace collie::detail {

class OpState;

struct ShmGroupConfig {
  std::string job_id;
  std::string name;       // user-visible group name (for messages)
  uint64_t group_id = 0;  // same on every member
  std::vector<int> world_ranks;
  int my_group_rank = 0;
  size_t slot_bytes = 0;
  size_t ring_bytes = 0;  // p2p rings: world group only
  bool with_rings = false;
  double timeout_seconds = 300;
  // COLLIE_DEBUG=detail: no eager rooted calls (step_op.h), every call checks
  // every rank's fingerprint before it returns.
  bool check_every_call = false;
  // The job has more ranks than this machine has CPUs (the same on every rank:
  // one machine, one job size). Decides spinning and p2p pulls.
  bool oversubscribed = false;
  // Collectives may read private tensors with CMA (where the group agrees on
  // CMA): when not oversubscribed, or COLLIE_CMA=always.
  bool collective_cma = true;
};

class ShmGroup {
 public:
  explicit ShmGroup(ShmGroupConfig config);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  const ShmGroupConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  int size() const { return static_cast<int>(config_.world_ranks.size()); }
  int rank() const { return config_.my_group_rank; }
  int world_rank(int group_rank) const {
    return config_.world_ranks[static_cast<size_t>(group_rank)];
  }
  size_t slot_bytes() const { return config_.slot_bytes; }
  // Bytes of one per-destination piece of a slot: slot / N, 64-byte aligned
  // (reduce_scatter, scatter, two-shot slices). Divided once here: a 64-bit
  // division takes tens of cycles, and small calls asked for it several times.
  size_t piece_bytes() const { return piece_bytes_; }
  // The same for all_to_all's pieces, behind its header (layout.h).
  size_t all_to_all_piece_bytes() const { return all_to_all_piece_bytes_; }
  size_t ring_bytes() const { return config_.ring_bytes; }
  double timeout_seconds() const { return config_.timeout_seconds; }

  // Inline: every step of every collective reads a peer's control line.
  SegmentHeader& header(int group_rank) const {
    return *reinterpret_cast<SegmentHeader*>(segment_base(group_rank));
  }
  StepControl& control(int group_rank) const {
    return *reinterpret_cast<StepControl*>(segment_base(group_rank) + layout_.step_control);
  }
  uint8_t* slot(int group_rank, uint64_t step) const {
    return segment_base(group_rank) + layout_.slots + (step % 2) * config_.slot_bytes;
  }
  uint8_t* small_slot(int group_rank, uint64_t step) const {
    return segment_base(group_rank) + layout_.small_slots + (step % kStepLines) * kSmallSlotBytes;
  }
  // The p2p ring owner -> dst (world group): its control lines and its data.
  // Inline: every pass of a waiting caller looks at each source's head.
  RingControl& ring_control(int owner, int dst) const {
    return reinterpret_cast<RingControl*>(segment_base(owner) + layout_.ring_controls)[dst];
  }
  uint8_t* ring_data(int owner, int dst) const {
    return segment_base(owner) + layout_.ring_data + static_cast<size_t>(dst) * config_.ring_bytes;
  }
  pid_t pid(int group_rank) const { return header(group_rank).pid; }
  // Every member can read every other's memory with process_vm_readv (cma.h);
  // the same answer on every rank.
  bool cma() const { return cma_; }
  // Whether collectives read private tensors with CMA (direct_ops.h, all_to_all)
  // instead of staging them: only when every rank has a CPU. With more ranks than
  // CPUs the reads wait for the owners to be scheduled, and a call takes a second
  // round of all ranks to know they are done: 4 ranks on 2 cores, all_gather of
  // 2 MiB per rank took 517-603 us with CMA and 264-271 us staged, all_to_all of
  // 512 KiB 166-193 against 71-87 us (broadcast even).
  // COLLIE_CMA=always uses it all the same (every rank must say so: the path is
  // in the fingerprint).
  bool cma_for_collectives() const { return cma_ && config_.collective_cma; }
  // Which transfers take a single copy, by operation and size (copy_rules.h),
  // for the copy path the group agreed on (its most cautious member's
  // preference, copy_path.h; staged where a member lacks CMA). The same table
  // on every rank.
  const CopyRules& copy_rules() const { return copy_rules_; }

  // ---- progress-engine state ----
  uint64_t next_step = 1;                      // steps are numbered from 1
  // What this rank's StepControl::transfers_done reaches once its peers have
  // made every transfer with its buffers of its calls so far: each call adds
  // its own when its step 0 is consumed (calls on a group are, in order).
  uint64_t transfers_done_target = 0;
  // Whether the group's ops count transfers_done (and wait for it: StepOp::
  // wait_at_step_only_until_done_with_me): with more than 2 ranks. With 2 the
  // one peer is the only user of a rank's buffers, its step flag says as much,
  // and a locked add on the peer's line per call would cost.
  bool counts_transfers() const { return size() > 2; }
  std::deque<std::unique_ptr<OpState>> queue;  // issued, not yet completed, in order
  std::atomic<size_t> queue_size{0};           // queue.size(), readable by other threads
  std::string failure;                         // set once an operation failed
  std::vector<const uint8_t*> step_slots;      // scratch of StepOp (one op advances at a time)
  // A second scratch of group size: the sources a step reduces (an op's own
  // vector was a malloc and a free per small reduce or reduce_scatter).
  std::vector<const uint8_t*> step_sources;
  // Steps of eager rooted calls (step_op.h) whose peers' fingerprints this rank
  // has not compared yet, oldest first, with its own fingerprint for each (a ring
  // of at most kStepRecords). Compared as soon as every peer has published the
  // step, at the latest before this rank gets kStepLines + 1 steps past it, and by
  // drain (UncheckedCallCheck).
  struct UncheckedCall {
    uint64_t step = 0;
    uint64_t words[3] = {0, 0, 0};
  };
  UncheckedCall unchecked[kStepRecords];
  size_t unchecked_first = 0;  // index of the oldest
  size_t unchecked_count = 0;
  // The group's name as its calls give it (the world's config name is "world";
  // users know it as collie_world_group or hccl_world_group), for the messages
  // about unchecked calls. Set by the first eager call.
  std::shared_ptr<const std::string> call_name;
  const UncheckedCall& oldest_unchecked() const { return unchecked[unchecked_first]; }
  const UncheckedCall& newest_unchecked() const {
    return unchecked[(unchecked_first + unchecked_count - 1) % kStepRecords];
  }

 private:
  ShmGroupConfig config_;
  SegmentLayout layout_;
  std::vector<Segment> segments_;  // by group rank
  size_t piece_bytes_;
  size_t all_to_all_piece_bytes_;
  bool cma_ = false;
  CopyRules copy_rules_;

  uint8_t* segment_base(int group_rank) const {
    return static_cast<uint8_t*>(segments_[static_cast<size_t>(group_rank)].data());
  }
  std::string segment_name(int group_rank) const;
  void create_own_segment();
  void map_peers_and_unlink();
  // Reads once the pages of every segment that small calls use (Segment::touch).
  void touch_pages_every_call_reads() const;
  void agree_on_cma();
};

// A 64-bit id for a group from its name, ranks and incarnation (FNV-1a).
uint64_t make_group_id(const std::string& name, const std::vector<int>& world_ranks,
                       uint64_t incarnation);

}  // namespace collie::detail
