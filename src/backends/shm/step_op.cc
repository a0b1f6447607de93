#include "backends/shm/step_op.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "backends/shm/engine.h"
#include "collie/errors.h"

namespace collie::detail {

Fingerprint Fingerprint::of(const OpInfo& info) {
  Fingerprint f;
  f.words[0] = info.pack_identity();
  f.words[1] = info.count;
  f.words[2] = info.seq;
  return f;
}

std::string Fingerprint::describe() const {
  OpInfo info;
  info.unpack_identity(words[0]);
  info.count = words[1];
  std::string s = info.describe_call();  // the group is the same for all
  switch ((words[0] >> 24) & 0xff) {
    case 1: return s + " (two-shot)";
    case 2: return s + " on shared tensors";
    case 3: return s + " on private tensors (CMA)";
    case 5:
      return s + " (a slot per step: more ranks than CPUs)";
    case 7:
      return s + " (the root telling where its input lies: cma_if_huge_pages.h)";
    default: return s;
  }
}

StepOp::StepOp(ShmEngine& engine, ShmGroup& group, const WorkPtr& work, size_t nsteps)
    : OpState(work),
      nsteps_(nsteps),
      engine_(engine),
      group_(group),
      fingerprint_(Fingerprint::of(this->work()->info())) {}

// A peer publishes ready = k-1 only after it finished reading step k-2 (it
// consumes a step before producing the next), so ready >= k-1 means slot k % 2
// is free again, and ready >= k-kStepLines+1 that line k % kStepLines is. One
// flag per step instead of two: every cache line a waiting rank reads from a
// peer is a cross-core transfer, the main cost of a small step.
namespace {
const StepLine& line_of(const ShmGroup& g, int p, uint64_t step) {
  return g.control(p).line[step % kStepLines];
}

bool published(const ShmGroup& g, int p, uint64_t step) {
  return line_of(g, p, step).step.load(std::memory_order_acquire) >= step;
}

// Whether rank p stamped step `step` with the call `words` (kind, sizes: the two
// words Fingerprint::same_call compares), read in place from its step line: for
// a step every rank is still in (no copies on the fast path).
bool stamped_with(const ShmGroup& g, int p, uint64_t step, const uint64_t words[3]) {
  const StepLine& line = line_of(g, p, step);
  return line.fingerprint[0].load(std::memory_order_relaxed) == words[0] &&
         line.fingerprint[1].load(std::memory_order_relaxed) == words[1];
}

// The same from rank p's step record, which outlives the line (unchecked calls).
// A record reused for a later step reads as a mismatch; check_unchecked_calls
// compares every call before that can happen.
bool recorded_with(const ShmGroup& g, int p, uint64_t step, const uint64_t words[3]) {
  const StepRecord& r = g.control(p).record[step % kStepRecords];
  return r.step.load(std::memory_order_relaxed) == step &&
         r.fingerprint[0].load(std::memory_order_relaxed) == words[0] &&
         r.fingerprint[1].load(std::memory_order_relaxed) == words[1];
}

// "rank 0: broadcast float32 x2 root 0 (group rank); rank 1: ..." for step `step`,
// from the step records.
std::string describe_calls(const ShmGroup& g, uint64_t step) {
  std::string diff;
  int shared = 0, arrived = 0;
  for (int p = 0; p < g.size(); ++p) {
    diff += (p ? "; " : "") + std::string("rank ") + std::to_string(g.world_rank(p)) + ": ";
    const StepRecord& r = g.control(p).record[step % kStepRecords];
    if (!published(g, p, step) || r.step.load(std::memory_order_relaxed) != step) {
      diff += "(not at this call yet)";
      continue;
    }
    Fingerprint f;
    for (int w = 0; w < 3; ++w) f.words[w] = r.fingerprint[w].load(std::memory_order_relaxed);
    shared += ((f.words[0] >> 24) & 0xff) == 2;
    ++arrived;
    diff += f.describe();
  }
  if (shared > 0 && shared < arrived) {
    diff += ". Tensors from empty_shared() must be passed by every rank of the call or by none";
  }
  return diff;
}

const char* const kMismatch = ": ranks called different operations (or sizes) at the same point: ";

// The newest step whose unchecked call must be compared before this rank
// publishes `step`: a peer reuses the record of step u for u + kStepRecords,
// which needs every rank at u + kStepRecords - kStepLines + 1 (the freedom of a
// step in a line or small slot; a step in a slot needs more). So this rank
// compares u before it publishes step u + kStepRecords - kStepLines + 1, and by
// then (its own freedom for that step) every rank has published u. 0: none.
uint64_t must_check_through(uint64_t step) {
  static_assert(kStepRecords >= 2 * kStepLines - 2, "records must outlive the lines");
  return step > kStepRecords - kStepLines + 1 ? step - (kStepRecords - kStepLines + 1) : 0;
}
}  // namespace

// Only the peers' flags: this rank published the step long before, and reading
// its own flag back from a line its peers have read since missed the cache as a
// peer's would (so did a p2p sender's read of its own ring head). peers_ready
// and check_fingerprints still read this rank's line too, right after writing
// it (a store-buffer hit; skipping it there measured 5 % slower).
bool StepOp::peers_freed(uint64_t step) const {
  const uint64_t lead = this->lead();
  if (step <= lead + 1) return true;
  const int me = group_.rank();
  for (int p = 0; p < group_.size(); ++p) {
    if (p != me && !published(group_, p, step - lead)) return false;
  }
  return true;
}

// Data in a small slot (or a slot) is a second cache line or two to fetch
// after a peer's flag, and reading it only once the flag shows makes the two
// cross-core transfers one after the other. So when the data is at most
// kPrefetchedLines lines (prefetch_peers_data), each look at the flags also
// prefetches it: when a peer publishes, the look that sees its flag has its
// data on the way too (its stores to the data come before the flag's, and the
// prefetch is issued after the flag's load). 2 ranks, back to back, on the
// Firecracker VM's slow phase (alternating runs): all_gather 44-128 B per rank
// 0.69-0.87 -> 0.59-0.73 us, all_reduce 48-96 B 0.66-0.81 -> 0.58-0.71,
// reduce_scatter 128 B 0.70-0.76 -> 0.61-0.65, all_to_all's 64-byte pieces
// 0.77-0.96 -> 0.65-0.83; in the fast phase, where a peer's line arrives
// sooner, the same within the noise either way (all_gather 88 B 0.30-0.35 us).
// More lines (up to 8) were no faster at 256 B-2 KiB
// and up to 12 % slower for 1 KiB pieces: a reader that keeps fetching lines
// its peer is still writing makes the writer take them back. Those are
// prefetched once the flags show instead (prefetch_ready_data). A prefetch is
// only a hint: the data is read after the flag, as before.
bool StepOp::peers_ready(uint64_t step) const {
  bool ready = true;
  if (prefetched_lines_ == 0) {
    for_each_awaited([&](int p) { ready &= published(group_, p, step); });
    return ready;
  }
  const int me = group_.rank();
  for_each_awaited([&](int p) {
    if (p == me) return;
    ready &= published(group_, p, step);
    const uint8_t* data = data_of(p, step) + prefetch_offset_;
    for (unsigned l = 0; l < prefetched_lines_; ++l) __builtin_prefetch(data + 64 * l, 0, 3);
  });
  return ready;
}

// While the current step waits: the ranks whose step now shows, with this op's
// fingerprint, to consume_arrived() (consume_as_ranks_arrive), this rank
// first, then from the next rank on (with more than two ranks, those that came
// together then read different ranks' memory first). A rank stamped with
// another call is left to check_fingerprints, which names it once every rank
// has come. Whether any was handed over.
bool StepOp::consume_arrivals() {
  if (index_ != early_index_) return false;
  const int me = group_.rank(), n = group_.size();
  bool any = false;
  for (int i = 0; i < n; ++i) {
    const int p = (me + i) % n;
    if (p >= 64) continue;
    const uint64_t bit = uint64_t{1} << p;
    if ((arrived_ & bit) != 0) continue;
    if (p != me &&
        (!published(group_, p, step_) || !stamped_with(group_, p, step_, fingerprint_.words))) {
      continue;
    }
    arrived_ |= bit;
    any = true;
    try {
      if (consume_arrived(index_, p, data_of(p, step_))) consumed_early_ |= bit;
    } catch (const CommError&) {
      // Moving data early is an offer: a read or write that fails (p gave the
      // call up, say on a mismatch with a rank this one has not seen yet, and
      // its memory is gone) is left to consume(), which runs after every check,
      // so the call fails with what went wrong rather than with its symptom.
    }
  }
  return any;
}

// Data of more than kPrefetchedLines lines, in a small slot or a slot: once a
// peer's flag shows, the step's data there is complete and nobody writes it, so
// its first lines are asked for all at once, and they cross together instead of
// one after another as the reading loop (a copy, a reduction) reaches them and
// the hardware's prefetcher learns the stream. 2 ranks after a barrier,
// alternating launches (Firecracker VM, AMD Zen 5, its slow phase): all_gather
// 4 KiB 1.18-1.20 -> 1.01-1.07 us, 8 KiB 1.26-1.35 -> 1.01-1.07; all_reduce
// 4 KiB 1.29-1.31 -> 1.02-1.05; reduce_scatter 4 KiB 1.24-1.31 -> 1.07-1.20;
// reduce 32 KiB 3.16-3.27 -> 2.97-3.04. 64 lines did better than 32 at 4 KiB.
void StepOp::prefetch_ready_data() const {
  if (lines_on_ready_ == 0) return;
  const int me = group_.rank();
  for_each_awaited([&](int p) {
    if (p == me) return;
    const uint8_t* data = data_of(p, step_) + prefetch_offset_;
    for (unsigned l = 0; l < lines_on_ready_; ++l) __builtin_prefetch(data + 64 * l, 0, 3);
  });
}

void StepOp::prefetch_peers_data(size_t offset, size_t bytes) {
  prefetched_lines_ = lines_on_ready_ = 0;
  if (bytes == 0 || place_ == Place::kLine) return;
  prefetch_offset_ = offset;
  // The lines [offset, offset + bytes) touches (slots start on a line).
  const size_t lines = (offset % 64 + bytes + 63) / 64;
  if (lines <= kPrefetchedLines) {
    prefetched_lines_ = static_cast<uint8_t>(lines);
  } else {
    lines_on_ready_ = static_cast<uint8_t>(std::min(lines, kReadyPrefetchLines));
  }
}

bool StepOp::place_small(size_t bytes_per_step) {
  if (bytes_per_step <= kInlineBytes) {
    place_ = Place::kLine;
  } else if (bytes_per_step <= kSmallSlotBytes) {
    place_ = Place::kSmallSlot;
    prefetch_peers_data(0, bytes_per_step);
  }
  return place_ != Place::kSlot;
}

uint8_t* StepOp::data_of(int p, uint64_t step) const {
  switch (place_) {
    case Place::kLine:
      return group_.control(p).line[step % kStepLines].data;
    case Place::kSmallSlot:
      return group_.small_slot(p, step);
    case Place::kSlot:
      break;
  }
  return group_.slot(p, step);
}

// consume() reads the data of the ranks the step waited for and its own, no
// other's (their step may not show yet): those stay null, so that a read of one
// fails at once instead of reading an earlier step's data.
void StepOp::point_slots_at_step(std::vector<const uint8_t*>& slots) const {
  if (source_ != kEveryRank) {
    std::fill(slots.begin(), slots.end(), nullptr);
    slots[static_cast<size_t>(group_.rank())] = data_of(group_.rank(), step_);
  }
  for_each_awaited([&](int p) { slots[static_cast<size_t>(p)] = data_of(p, step_); });
}

void StepOp::check_fingerprints(uint64_t step) const {
  // The common case, checked on the two words same_call() compares: no strings built.
  bool mismatch = false;
  for_each_awaited([&](int p) { mismatch |= !stamped_with(group_, p, step, fingerprint_.words); });
  if (mismatch) {
    throw CommError(work()->info().describe() + kMismatch + describe_calls(group_, step));
  }
}

void StepOp::wait_at_step_only_for(size_t index, int source) {
  if (group_.config().check_every_call || index >= kStepsWithSources) return;
  // With 2 ranks the other rank is every peer: a rank that waits for it checks
  // every fingerprint at once and leaves nothing unchecked, so later calls need
  // not read its step records again (2 ranks, broadcast of 256-512 B back to
  // back: 0.44-0.50 -> 0.37-0.41 us).
  if (source >= 0 && group_.size() == 2) source = kEveryRank;
  step_sources_[index] = source;
}

void StepOp::make_eager(int root, bool root_sends) {
  const bool root_here = group_.rank() == root;
  const int source = root_sends ? (root_here ? kNoRank : root) : (root_here ? kEveryRank : kNoRank);
  for (size_t index = 0; index < kStepsWithSources; ++index) wait_at_step_only_for(index, source);
}

bool check_unchecked_calls(ShmGroup& g, uint64_t through, uint64_t calling_seq) {
  while (g.unchecked_count != 0) {
    const ShmGroup::UncheckedCall& call = g.oldest_unchecked();
    // The peers' records only (see peers_freed): this rank's is the call itself.
    // 2 ranks, broadcast of 8 B back to back (eager: compared at the next
    // call): 0.32 -> 0.265 us.
    for (int p = 0; p < g.size(); ++p) {
      if (p != g.rank() && !published(g, p, call.step)) return call.step > through;
    }
    bool mismatch = false;
    for (int p = 0; p < g.size(); ++p) {
      if (p != g.rank()) mismatch |= !recorded_with(g, p, call.step, call.words);
    }
    if (mismatch) {
      const std::string why =
          " (seen after the call returned: in a rooted call a rank returns without waiting "
          "for the ranks whose data it does not need, and the call is compared at this rank's "
          "next call on the group that waits for every rank, or at most " +
          std::to_string(kStepRecords - kStepLines + 1) +
          " calls later; COLLIE_DEBUG=detail makes it wait)";
      const OpInfo info = unchecked_call_info(g, call);
      const std::string calls = describe_calls(g, call.step);
      const bool returned = call.words[2] != calling_seq;
      g.unchecked_count = 0;  // reported once; the group fails with it
      throw CommError(info.describe() + kMismatch + calls + (returned ? why : ""));
    }
    g.unchecked_first = (g.unchecked_first + 1) % kStepRecords;
    --g.unchecked_count;
  }
  return true;
}

Progress StepOp::advance() {
  bool moved = false;
  const int me = group_.rank();
  StepControl& mine = group_.control(me);
  while (index_ < nsteps_) {
    if (phase_ == Phase::WaitFree) {
      if (step_ == 0) {
        step_ = group_.next_step++;
        source_ = step_sources_[std::min(index_, kStepsWithSources - 1)];
      }
      // Earlier eager calls: compared where every peer has published them. A
      // step that waits for every rank waits for them all here (it waits for
      // those flags anyway); an eager one only for those whose records could be
      // reused otherwise (its freedom below waits for the same flags).
      if (group_.unchecked_count != 0 &&
          !check_unchecked_calls(group_,
                                 source_ == kEveryRank ? step_ - 1 : must_check_through(step_),
                                 fingerprint_.words[2])) {
        return moved ? Progress::Advanced : Progress::Blocked;
      }
      if (!peers_freed(step_)) return moved ? Progress::Advanced : Progress::Blocked;
      produce(index_, data_of(me, step_));
      StepRecord& record = mine.record[step_ % kStepRecords];
      StepLine& line = mine.line[step_ % kStepLines];
      // The record keeps every word; the line only those peers compare (layout.h).
      for (size_t w = 0; w < std::size(record.fingerprint); ++w) {
        record.fingerprint[w].store(fingerprint_.words[w], std::memory_order_relaxed);
      }
      for (size_t w = 0; w < std::size(line.fingerprint); ++w) {
        line.fingerprint[w].store(fingerprint_.words[w], std::memory_order_relaxed);
      }
      record.step.store(step_, std::memory_order_relaxed);
      line.step.store(step_, std::memory_order_release);
      phase_ = Phase::WaitReady;
      moved = true;
      // Peers are rung after the first look at their flags, not before: the ring
      // is a full fence, which would wait for this store's cache-line transfer
      // before the load of a peer's line could start; this way both transfers
      // are in flight together. The ring is only delayed by that one load.
      const bool ready = peers_ready(step_) && done_waiting();
      engine_.ring_peers(group_);
      arrived_ = consumed_early_ = 0;
      if (!ready) {
        consume_arrivals();
        return Progress::Advanced;
      }
    } else if (!peers_ready(step_) || !done_waiting()) {
      // Meanwhile, earlier eager calls that became comparable are compared: a
      // mismatch is reported as soon as it shows, not when a peer that stopped
      // at it is found dead or late.
      if (group_.unchecked_count != 0) check_unchecked_calls(group_, 0, fingerprint_.words[2]);
      moved |= consume_arrivals();
      return moved ? Progress::Advanced : Progress::Blocked;
    }
    prefetch_ready_data();
    check_fingerprints(step_);
    compared_every_rank_ |= source_ == kEveryRank;
    std::vector<const uint8_t*>& slots = group_.step_slots;
    point_slots_at_step(slots);
    consume(index_, slots);
    // The fingerprints not waited for are compared later, unless an earlier
    // step of the call compared every rank's already (they are the same call's).
    if (source_ != kEveryRank && !compared_every_rank_) {
      // At most kStepLines + 1 are ever left (must_check_through): the ring holds
      // them. A full ring would be a bug in that bound; fail loudly, not overwrite.
      if (group_.unchecked_count == kStepRecords) {
        throw std::logic_error(work()->info().describe() +
                               ": internal error: too many eager calls left unchecked");
      }
      ShmGroup::UncheckedCall& call =
          group_.unchecked[(group_.unchecked_first + group_.unchecked_count) % kStepRecords];
      call.step = step_;
      for (int w = 0; w < 3; ++w) call.words[w] = fingerprint_.words[w];
      ++group_.unchecked_count;
      // A copy, once per group: a blocking call's OpInfo only borrows the name
      // (Group::new_work).
      if (!group_.call_name) {
        group_.call_name = std::make_shared<const std::string>(*work()->info().group);
      }
    }
    phase_ = Phase::WaitFree;
    step_ = 0;
    ++index_;
    moved = true;
  }
  return Progress::Done;
}

std::vector<int> StepOp::blocked_on() const {
  std::vector<int> ranks;
  if (step_ == 0) return ranks;
  const uint64_t lead = this->lead();
  // In WaitFree: the freedom's flag, or an unchecked call this step waits for.
  uint64_t free_at = step_ > lead + 1 ? step_ - lead : 0;
  if (source_ == kEveryRank && group_.unchecked_count != 0) {
    free_at = std::max(free_at, group_.oldest_unchecked().step);
  }
  // Waiting for its readers (done_with_me): the peers not at this step yet,
  // which may still read this rank's buffers.
  const bool readers = phase_ == Phase::WaitReady && !done_waiting();
  for (int p = 0; p < group_.size(); ++p) {
    bool waiting = phase_ == Phase::WaitFree ? free_at != 0 && !published(group_, p, free_at)
                                             : (waits_for(p) || (readers && p != group_.rank())) &&
                                                   !published(group_, p, step_);
    if (waiting) ranks.push_back(group_.world_rank(p));
  }
  return ranks;
}

OpInfo unchecked_call_info(const ShmGroup& g, const ShmGroup::UncheckedCall& call) {
  OpInfo info;
  info.unpack_identity(call.words[0]);
  info.count = call.words[1];
  info.seq = call.words[2];
  info.group = g.call_name ? g.call_name : std::make_shared<const std::string>(g.name());
  info.blocking = true;
  return info;
}

OpInfo unchecked_call_info(const ShmGroup& g) {
  return unchecked_call_info(g, g.newest_unchecked());
}

namespace {
// Waits, like any operation (deadline, liveness), until every peer has reached
// the group's newest unchecked call, then compares them all.
class UncheckedCallCheck final : public OpState {
 public:
  UncheckedCallCheck(ShmGroup& group, const WorkPtr& work) : OpState(work), group_(group) {}

  Progress advance() override {
    if (group_.unchecked_count == 0) return Progress::Done;
    return check_unchecked_calls(group_, group_.newest_unchecked().step) ? Progress::Done
                                                                         : Progress::Blocked;
  }

  std::vector<int> blocked_on() const override {
    std::vector<int> ranks;
    if (group_.unchecked_count == 0) return ranks;
    for (int p = 0; p < group_.size(); ++p) {
      if (!published(group_, p, group_.newest_unchecked().step))
        ranks.push_back(group_.world_rank(p));
    }
    return ranks;
  }

 private:
  ShmGroup& group_;
};
}  // namespace

std::unique_ptr<OpState> make_unchecked_call_check(ShmGroup& group, const WorkPtr& work) {
  return std::make_unique<UncheckedCallCheck>(group, work);
}

}  // namespace collie::detail
