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
    if (!published(group_, p, step)) return false;
  }
  return true;
}

uint8_t* StepOp::data_of(int p, uint64_t step) const {
  return inline_ ? group_.control(p).line[step % 2].data : group_.slot(p, step);
}

void StepOp::check_fingerprints(uint64_t step) const {
  auto fingerprint_of = [&](int p) {
    Fingerprint f;
    for (int w = 0; w < 3; ++w) {
      f.words[w] = group_.control(p).line[step % 2].fingerprint[w].load(std::memory_order_relaxed);
    }
    return f;
  };
  // The common case, checked on the two words same_call() compares: no strings built.
  bool mismatch = false;
  for (int p = 0; p < group_.size(); ++p) {
    const StepLine& line = group_.control(p).line[step % 2];
    mismatch |= line.fingerprint[0].load(std::memory_order_relaxed) != fingerprint_.words[0] ||
                line.fingerprint[1].load(std::memory_order_relaxed) != fingerprint_.words[1];
  }
  if (!mismatch) return;
  std::string diff;
  int shared = 0;
  for (int p = 0; p < group_.size(); ++p) {
    Fingerprint f = fingerprint_of(p);
    shared += ((f.words[0] >> 24) & 0xff) == 2;
    diff += (p ? "; " : "") + std::string("rank ") + std::to_string(group_.world_rank(p)) + ": " +
            f.describe();
  }
  if (shared > 0 && shared < group_.size()) {
    diff += ". Tensors from empty_shared() must be passed by every rank of the call or by none";
  }
  throw CommError(work()->info().describe() +
                  ": ranks called different operations (or sizes) at the same point: " + diff);
}

Progress StepOp::advance() {
  bool moved = false;
  const int me = group_.rank();
  StepControl& mine = group_.control(me);
  while (index_ < nsteps_) {
    if (phase_ == Phase::WaitFree) {
      if (step_ == 0) step_ = group_.next_step++;
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
    bool waiting = phase_ == Phase::WaitFree ? step_ > 2 && !published(group_, p, step_ - 1)
                                             : !published(group_, p, step_);
    if (waiting) ranks.push_back(group_.world_rank(p));
  }
  return ranks;
}

}  // namespace collie::detail
