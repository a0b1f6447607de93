// StepOp: the skeleton every shared-memory collective is built from.
//
// A collective is a sequence of steps. In step k each rank
//   1. waits until every peer has finished reading step k-2, which it shows by
//      having published ready >= k-1 (slots are double buffered, so a fast rank
//      runs at most one step ahead: no barrier between consecutive steps or
//      operations); a step whose data fits its step line or a small slot
//      (place_small) needs only those, of which there are kStepLines: it waits
//      for ready >= k-kStepLines+1,
//   2. produce(): writes its contribution into its slot k % 2 (or its line),
//      stamps the step's fingerprint and publishes ready = k,
//   3. waits until every peer has published ready >= k, checks that their
//      fingerprints equal its own (same op, dtype, count, root, reduce op),
//   4. consume(): reads what it needs from the peers' slots.
// Chunking large tensors into steps bounds the staging memory. Step numbers are
// per group and never reset, so they also order consecutive operations.
//
// Ranks handled as they come. An op whose step moves data per rank (all_to_all's
// pulled pieces, the single-copy all_gather) may have 3 hand each rank whose
// step shows to consume_arrived() while the step still waits for the others
// (consume_as_ranks_arrive); consume() then does the rest once every rank has
// come, and what failed early (a read from a rank that gave the call up) again
// after every check. With more ranks than cores the ranks that run first do
// their share while the others wait for a core. Such an op's last step may then
// wait for nobody's flags but for the peers that use this rank's buffers to say
// they are done (wait_at_step_only_until_done_with_me), so a rank returns once
// its own data has moved, as an MPI rank does once its own sends and receives
// are complete. A step after one that compared every rank's fingerprint leaves
// nothing to compare later. Neither applies to a group of 2, whose one peer
// coming is every peer coming and whose one peer is the only user of this
// rank's buffers (with both, 2 ranks' all_gather and all_to_all of 64 MiB ran
// 5-15 % slower, alternating launches).
//
// Eager rooted calls. In a staged rooted call (make_eager) a rank waits in step 3
// of every step only for the ranks whose data it reads: a broadcast's or
// scatter's root and a reduce's or gather's non-roots read nobody's and return
// once their data is in their slots (step 1's wait for the peers to free them
// still paces a call of several steps), like MPI's eager sends; the others wait
// for the root (broadcast, scatter) or for everyone
// (the root of reduce, gather; a non-root of broadcast or scatter in a group of
// 2, where the root is every peer). The fingerprints it did not wait for are kept
// (ShmGroup::unchecked) and compared, from the peers' step records, as soon as
// every peer has published that step: at the latest when this rank's next call
// that waits for every rank has them all, before it gets kStepLines + 1 steps past
// the call (it waits then), or when the group is drained (destroy_group,
// release). A mismatch is a CommError naming the earlier call. With more ranks
// than cores a rank then need not wait for every rank to be scheduled (4 ranks
// on 2 cores, 8 B reduce: 5.7-6.3 -> 0.4-0.6 us; back to back, roots rotating,
// broadcast of 128 and 512 KiB 23.8-24.6 -> 19.5-21.2 and 86.3-87.0 -> 76.8-81.4
// us, scatter 16.3-16.9 -> 14.8-15.6 and 37.4-37.9 -> 34.8-35.6, gather and
// reduce even; before the fifty-fifth session only one-step calls of at most
// 4 KiB per rank were eager), and a root of small broadcasts
// (or a non-root of small reduces: their data fits a line or a small slot) runs
// up to kStepLines - 1 calls ahead of the others. The single-copy rooted calls
// (direct_ops.cc, DirectOp) choose whom each of their two steps waits for the
// same way (wait_at_step_only_for). COLLIE_DEBUG=detail turns it off.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/shm/op_state.h"
#include "backends/shm/shm_group.h"

namespace collie::detail {

class ShmEngine;

// The identity of a collective call, compared across ranks at every step.
struct Fingerprint {
  uint64_t words[3] = {0, 0, 0};  // {kind|dtype|reduce op|root, count, seq}
  static Fingerprint of(const OpInfo& info);
  bool same_call(const Fingerprint& other) const {
    return words[0] == other.words[0] && words[1] == other.words[1];
  }
  std::string describe() const;
};

class StepOp : public OpState {
 public:
  StepOp(ShmEngine& engine, ShmGroup& group, const WorkPtr& work, size_t nsteps);

  // Makes a staged rooted call with root `root` eager (above), unless the group
  // checks every call: `root_sends` for broadcast and scatter, false for reduce
  // and gather. Every step waits alike.
  void make_eager(int root, bool root_sends);

  Progress advance() final;
  std::vector<int> blocked_on() const final;

 protected:
  // Writes this rank's contribution for step `step` (0-based within the op).
  virtual void produce(size_t step, uint8_t* my_slot) = 0;
  // Reads the peers' slots (indexed by group rank) for step `step`.
  virtual void consume(size_t step, const std::vector<const uint8_t*>& slots) = 0;

  ShmGroup& group() const { return group_; }
  // Whom this rank waits for in step 3 of a step: every rank (the default),
  // one group rank, or nobody.
  static constexpr int kEveryRank = -2;
  static constexpr int kNoRank = -1;
  // Has this rank wait in step `index` (< kStepsWithSources) of the op, and in
  // the steps after it if it is the last of them, only for `source` (a group
  // rank, kNoRank or kEveryRank), as an eager call does (above, make_eager):
  // for the ranks whose data this one reads in that step, or whose reads of
  // this one's buffers must end before it goes on. The fingerprints it does not
  // wait for are compared later, as an eager call's. Every rank must choose from
  // what the fingerprint holds; nothing changes where the group checks every
  // call (COLLIE_DEBUG=detail).
  static constexpr size_t kStepsWithSources = 2;
  void wait_at_step_only_for(size_t index, int source);
  // Whether this rank waits for group rank p's flag in the current step.
  bool waits_for(int p) const { return source_ == kEveryRank || source_ == p; }
  // Marks the algorithm variant in the fingerprint, so ranks that picked different
  // algorithms for the same call fail loudly instead of mixing their data.
  void set_variant(uint8_t variant) { fingerprint_.words[0] |= static_cast<uint64_t>(variant) << 24; }
  // Every step's data takes at most `bytes_per_step`, packed from the start of
  // the slot. Up to kInlineBytes, produce() and consume() get the step line's
  // data field instead of the slots, so a peer's flag, fingerprint and data
  // arrive in one cache line; up to kSmallSlotBytes, small slots. Either lets a
  // rank publish its step up to kStepLines - 1 steps ahead (eager calls in a
  // row). False (nothing changes) for more. The same choice on every rank (it
  // may depend only on what the fingerprint checks).
  bool place_small(size_t bytes_per_step);
  // Has this rank prefetch the `bytes` it will read from `offset` in each peer's
  // data for a step (data_of): with every look at the peers' flags when they
  // take at most kPrefetchedLines lines, so that they travel with the flag
  // instead of after it; otherwise their first kReadyPrefetchLines lines, all at
  // once as soon as the flags show, so that they travel together instead of one
  // after another as the reading loop reaches them. place_small() asks for its
  // small slots' data; ops whose steps go to the slots may ask for what they
  // read there. Nothing for data in the step lines, which come with the flags,
  // nor for 0 bytes (a rank that reads none of its peers' data).
  void prefetch_peers_data(size_t offset, size_t bytes);
  // Has step `index` of the op hand each rank's step to consume_arrived() as
  // soon as it shows (published, with this op's fingerprint), this rank's own
  // first, while the step still waits for the others; consume() then runs as
  // usual once every rank's has. For a step whose reads take long, so a rank
  // that arrived early does its share while late ranks are still coming, as
  // MPI's nonblocking exchanges do (4 ranks on 2 cores after a barrier: the
  // running ranks read each other's pieces before the others are scheduled).
  // Group ranks from 64 on go to consume() only. The same choice need not be
  // made on every rank. Nothing changes in a group of 2 (above), unless
  // `with_two`: for a step whose parts are small, so that a rank that waits
  // does its own part meanwhile instead of after its peer's flag shows, on the
  // call's critical path.
  void consume_as_ranks_arrive(size_t index, bool with_two = false) {
    if (with_two || group_.size() > 2) early_index_ = index;
  }
  // Rank p's step `step` shows (p may be this rank; called once per rank and
  // step, before consume()): the op may read what it can of it. Its reads must
  // be safe by p's step alone: the others' are not checked yet, and consume()
  // may still fail the call (the peers' fingerprints, an op's own checks).
  // True if it did all the step asks of this rank with p, which consume() then
  // skips (consumed_early); false if it did nothing. A CommError it throws
  // counts as false: what it did not finish, consume() must do.
  virtual bool consume_arrived(size_t /*step*/, int /*p*/, const uint8_t* /*data*/) {
    return false;
  }
  // Inside consume() of the step that handed ranks over as they came: whether
  // consume_arrived() did this rank's part with group rank p already.
  bool consumed_early(size_t p) const { return p < 64 && (consumed_early_ >> p & 1) != 0; }
  // Has step `index` wait for nobody's flags (wait_at_step_only_for) but until
  // done_with_me() says the peers that use this rank's buffers are done with
  // them (all_to_all's pulled pieces, all_gather's inputs or outputs), so a
  // rank need not wait for ranks that never touch its buffers to finish.
  // blocked_on() then names the peers that have not published the step.
  // Nothing changes in a group of 2 (above).
  void wait_at_step_only_until_done_with_me(size_t index) {
    if (!group_.counts_transfers()) return;
    wait_at_step_only_for(index, kNoRank);
    done_index_ = index;
  }
  virtual bool done_with_me() const { return true; }
  // This rank's slot for the step after the one being consumed. Inside consume()
  // it is already free: every peer published ready for this step, so every peer
  // finished reading the step before it, which used that slot.
  uint8_t* my_next_slot() const { return group_.slot(group_.rank(), step_ + 1); }
  // The data field (kInlineBytes) of group rank p's step line for the step being
  // produced or consumed, for an op whose steps go to slots but which may put a
  // small step there instead, saying so in the field itself (all_to_all's compact
  // first step): a line is reused kStepLines steps later, and a step in a slot
  // already waits until every peer has read the step before it.
  uint8_t* line_data(int p) const { return group_.control(p).line[step_ % kStepLines].data; }
  size_t nsteps_;  // may grow during consume() of the first step (all_to_all)

 private:
  enum class Phase { WaitFree, WaitReady };
  ShmEngine& engine_;
  ShmGroup& group_;
  Fingerprint fingerprint_;
  Phase phase_ = Phase::WaitFree;
  size_t index_ = 0;   // step within this operation
  uint64_t step_ = 0;  // the group's step number for index_, 0 before it starts
  enum class Place { kSlot, kSmallSlot, kLine };  // where a step's data goes
  Place place_ = Place::kSlot;
  // What of each peer's data for the step this rank prefetches, from
  // prefetch_offset_ (prefetch_peers_data): prefetched_lines_ lines with every
  // look at its flag (peers_ready), or lines_on_ready_ once the flags show
  // (prefetch_ready_data); one of the two is 0.
  static constexpr size_t kPrefetchedLines = 2;
  static constexpr size_t kReadyPrefetchLines = 64;
  size_t prefetch_offset_ = 0;
  uint8_t prefetched_lines_ = 0;
  uint8_t lines_on_ready_ = 0;
  // How many steps ahead of its slowest peer this op's steps may be published.
  uint64_t lead() const { return place_ == Place::kSlot ? 1 : kStepLines - 1; }
  int source_ = kEveryRank;  // whose step flags step 3 of the current step waits for
  // source_ for the op's first steps (wait_at_step_only_for); later ones wait
  // as the last of them.
  int step_sources_[kStepsWithSources] = {kEveryRank, kEveryRank};

  // consume_as_ranks_arrive: the step index, which ranks (bit p) its current
  // step has handed to consume_arrived(), and for which of them it said done.
  size_t early_index_ = SIZE_MAX;
  uint64_t arrived_ = 0;
  uint64_t consumed_early_ = 0;
  size_t done_index_ = SIZE_MAX;  // wait_at_step_only_until_done_with_me
  // A step of this call waited for every rank and compared their fingerprints:
  // its later steps that wait for fewer leave nothing to compare later.
  bool compared_every_rank_ = false;
  bool done_waiting() const { return index_ != done_index_ || done_with_me(); }

  // Calls f(p) for each group rank p whose flag the current step waits for
  // (waits_for), without a look at the others: an eager call's step waits for
  // one rank or none, and its per-rank loops were a non-root's gather of 8 B ~300
  // of its ~2,400 instructions with 8 ranks.
  template <typename F>
  void for_each_awaited(F&& f) const {
    if (source_ == kEveryRank) {
      for (int p = 0; p < group_.size(); ++p) f(p);
    } else if (source_ >= 0) {
      f(source_);
    }
  }

  bool peers_freed(uint64_t step) const;
  bool consume_arrivals();
  bool peers_ready(uint64_t step) const;
  void prefetch_ready_data() const;
  uint8_t* data_of(int group_rank, uint64_t step) const;
  void check_fingerprints(uint64_t step) const;
  void point_slots_at_step(std::vector<const uint8_t*>& slots) const;
};

// Compares the group's unchecked eager calls (ShmGroup::unchecked), oldest first,
// each as soon as every peer has published its step; they are then checked.
// False if one of step <= `through` is left (a peer has not published it yet);
// CommError naming the call on a mismatch, which says it was seen after the call
// returned unless the call is the one with sequence number `calling_seq` (a step
// of the call still running: 0, none).
bool check_unchecked_calls(ShmGroup& group, uint64_t through, uint64_t calling_seq = 0);

// The operation drain queues when the group has unchecked calls: it waits
// (deadline, liveness: like any operation) until it can check them all.
std::unique_ptr<OpState> make_unchecked_call_check(ShmGroup& group, const WorkPtr& work);
// The description of the group's newest unchecked call, for that operation's
// Work (kind, sizes, seq), or of `call`.
OpInfo unchecked_call_info(const ShmGroup& group);
OpInfo unchecked_call_info(const ShmGroup& group, const ShmGroup::UncheckedCall& call);

}  // namespace collie::detail
