#include "backends/shm/step_op.h"

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
    default: return s;
  }
}

StepOp::StepOp(ShmEngine& engine, ShmGroup& group, WorkPtr work, size_t nsteps)
    : OpState(std::move(work)),
      nsteps_(nsteps),
      engine_(engine),
      group_(group),
      fingerprint_(Fingerprint::of(this->work()->info())) {}

// A peer publishes ready = k-1 only after it finished reading step k-2 (it
// consumes a step before producing the next), so ready >= k-1 means slot k % 2
// is free again. One flag per step instead of two: every cache line a waiting
// rank reads from a peer is a cross-core transfer, the main cost of a small step.
namespace {
bool published(const ShmGroup& g, int p, uint64_t step) {
  return g.control(p).line[step % 2].step.load(std::memory_order_acquire) >= step;
}

// Whether rank p stamped step `step` with the call `words` (kind, sizes: the two
// words Fingerprint::same_call compares). Read in place: no copies on the fast path.
bool stamped_with(const ShmGroup& g, int p, uint64_t step, const uint64_t words[3]) {
  const StepLine& line = g.control(p).line[step % 2];
  return line.fingerprint[0].load(std::memory_order_relaxed) == words[0] &&
         line.fingerprint[1].load(std::memory_order_relaxed) == words[1];
}

// "rank 0: broadcast float32 x2 root 0 (group rank); rank 1: ..." for step `step`.
std::string describe_calls(const ShmGroup& g, uint64_t step) {
  std::string diff;
  int shared = 0, arrived = 0;
  for (int p = 0; p < g.size(); ++p) {
    diff += (p ? "; " : "") + std::string("rank ") + std::to_string(g.world_rank(p)) + ": ";
    if (!published(g, p, step)) {
      diff += "(not at this call yet)";
      continue;
    }
    Fingerprint f;
    for (int w = 0; w < 3; ++w) {
      f.words[w] = g.control(p).line[step % 2].fingerprint[w].load(std::memory_order_relaxed);
    }
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
}  // namespace

bool StepOp::peers_freed(uint64_t step) const {
  if (step <= 2) return true;
  for (int p = 0; p < group_.size(); ++p) {
    if (!published(group_, p, step - 1)) return false;
  }
  return true;
}

bool StepOp::peers_ready(uint64_t step) const {
  for (int p = 0; p < group_.size(); ++p) {
    if (waits_for(p) && !published(group_, p, step)) return false;
  }
  return true;
}

uint8_t* StepOp::data_of(int p, uint64_t step) const {
  return inline_ ? group_.control(p).line[step % 2].data : group_.slot(p, step);
}

void StepOp::check_fingerprints(uint64_t step) const {
  // The common case, checked on the two words same_call() compares: no strings built.
  bool mismatch = false;
  for (int p = 0; p < group_.size(); ++p) {
    if (waits_for(p)) mismatch |= !stamped_with(group_, p, step, fingerprint_.words);
  }
  if (mismatch) {
    throw CommError(work()->info().describe() + kMismatch + describe_calls(group_, step));
  }
}

void StepOp::make_eager(int root, bool root_sends, size_t bytes_per_rank) {
  if (group_.config().check_every_call || nsteps_ != 1 || bytes_per_rank > kEagerBytes) return;
  const bool root_here = group_.rank() == root;
  if (root_sends) {
    source_ = root_here ? kNoRank : root;
  } else {
    source_ = root_here ? kEveryRank : kNoRank;
  }
}

bool check_unchecked_call(ShmGroup& g) {
  const uint64_t step = g.unchecked_step;
  for (int p = 0; p < g.size(); ++p) {
    if (!published(g, p, step)) return false;
  }
  g.unchecked_step = 0;
  bool mismatch = false;
  for (int p = 0; p < g.size(); ++p) mismatch |= !stamped_with(g, p, step, g.unchecked_call);
  if (!mismatch) return true;
  const std::string why =
      " (seen when this rank's next call on the group started: a rooted call "
      "of at most " +
      std::to_string(kEagerBytes) +
      " bytes per rank returns without waiting for every rank; "
      "COLLIE_DEBUG=detail makes it wait)";
  throw CommError(unchecked_call_info(g).describe() + kMismatch + describe_calls(g, step) + why);
}

Progress StepOp::advance() {
  bool moved = false;
  const int me = group_.rank();
  StepControl& mine = group_.control(me);
  while (index_ < nsteps_) {
    if (phase_ == Phase::WaitFree) {
      if (step_ == 0) step_ = group_.next_step++;
      // The previous step's unchecked fingerprints: the flags this waits for are
      // the ones peers_freed() waits for (when step_ > 2) anyway.
      if (group_.unchecked_step != 0 && !check_unchecked_call(group_)) {
        return moved ? Progress::Advanced : Progress::Blocked;
      }
      if (!peers_freed(step_)) return moved ? Progress::Advanced : Progress::Blocked;
      produce(index_, data_of(me, step_));
      StepLine& line = mine.line[step_ % 2];
      for (int w = 0; w < 3; ++w) {
        line.fingerprint[w].store(fingerprint_.words[w], std::memory_order_relaxed);
      }
      line.step.store(step_, std::memory_order_release);
      phase_ = Phase::WaitReady;
      moved = true;
      // Peers are rung after the first look at their flags, not before: the ring
      // is a full fence, which would wait for this store's cache-line transfer
      // before the load of a peer's line could start; this way both transfers
      // are in flight together. The ring is only delayed by that one load.
      const bool ready = peers_ready(step_);
      engine_.ring_peers(group_);
      if (!ready) return Progress::Advanced;
    } else if (!peers_ready(step_)) {
      return moved ? Progress::Advanced : Progress::Blocked;
    }
    check_fingerprints(step_);
    std::vector<const uint8_t*>& slots = group_.step_slots;
    for (int p = 0; p < group_.size(); ++p) slots[static_cast<size_t>(p)] = data_of(p, step_);
    consume(index_, slots);
    if (source_ != kEveryRank) {  // the fingerprints not waited for: checked next step
      group_.unchecked_step = step_;
      for (int w = 0; w < 3; ++w) group_.unchecked_call[w] = fingerprint_.words[w];
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
  for (int p = 0; p < group_.size(); ++p) {
    bool waiting = phase_ == Phase::WaitFree ? (step_ > 2 || group_.unchecked_step != 0) &&
                                                   !published(group_, p, step_ - 1)
                                             : waits_for(p) && !published(group_, p, step_);
    if (waiting) ranks.push_back(group_.world_rank(p));
  }
  return ranks;
}

OpInfo unchecked_call_info(const ShmGroup& g) {
  OpInfo info;
  info.unpack_identity(g.unchecked_call[0]);
  info.count = g.unchecked_call[1];
  info.seq = g.unchecked_call[2];
  info.group = std::make_shared<const std::string>(g.name());
  info.blocking = true;
  return info;
}

namespace {
// Waits, like any operation (deadline, liveness), until every peer has reached
// the group's unchecked call, then checks it.
class UncheckedCallCheck final : public OpState {
 public:
  UncheckedCallCheck(ShmGroup& group, WorkPtr work) : OpState(std::move(work)), group_(group) {}

  Progress advance() override {
    if (group_.unchecked_step == 0 || check_unchecked_call(group_)) return Progress::Done;
    return Progress::Blocked;
  }

  std::vector<int> blocked_on() const override {
    std::vector<int> ranks;
    if (group_.unchecked_step == 0) return ranks;
    for (int p = 0; p < group_.size(); ++p) {
      if (!published(group_, p, group_.unchecked_step)) ranks.push_back(group_.world_rank(p));
    }
    return ranks;
  }

 private:
  ShmGroup& group_;
};
}  // namespace

std::unique_ptr<OpState> make_unchecked_call_check(ShmGroup& group, WorkPtr work) {
  return std::make_unique<UncheckedCallCheck>(group, std::move(work));
}

}  // namespace collie::detail
