#include "runtime/group.h"

#include <algorithm>
#include <bit>

#include "collie/errors.h"
#include "core/small_pool.h"
#include "runtime/interruptible_wait.h"

namespace collie::detail {

Group::Group(std::string name, std::vector<int> world_ranks, int my_world_rank,
             double timeout_seconds, std::unique_ptr<Backend> backend)
    : name_(std::move(name)),
      world_ranks_(std::move(world_ranks)),
      rank_(-1),
      timeout_seconds_(timeout_seconds),
      backend_(std::move(backend)) {
  ranks_are_world_ranks_ = true;
  for (size_t i = 0; i < world_ranks_.size(); ++i) {
    ranks_are_world_ranks_ &= world_ranks_[i] == static_cast<int>(i);
  }
  rank_ = group_rank_of(my_world_rank);
  const auto n = static_cast<unsigned>(world_ranks_.size());
  if (std::has_single_bit(n)) size_shift_ = std::countr_zero(n);
  recorder_ = std::make_shared<FlightRecorder>(name_, my_world_rank, flight_recorder_capacity());
  // The name every OpInfo carries shares ownership of the recorder, so a Work
  // (which holds its OpInfo) can record its end through a plain pointer.
  shared_name_ = std::shared_ptr<const std::string>(recorder_, &recorder_->group());
  borrowed_name_ =
      std::shared_ptr<const std::string>(std::shared_ptr<const std::string>(), shared_name_.get());
}

Group::~Group() = default;

int Group::find_group_rank(int world_rank) const {
  auto it = std::find(world_ranks_.begin(), world_ranks_.end(), world_rank);
  return it == world_ranks_.end() ? -1 : static_cast<int>(it - world_ranks_.begin());
}

namespace {
// No single-copy path starts below this many bytes per tensor
// (backends/shm/direct_ops.h).
constexpr uint64_t kSingleCopyMinBytes = 16u << 10;

// Whether a call of `info` may move a tensor of kSingleCopyMinBytes: none of its
// tensors holds more than `count` elements per rank of the group (all_gather's
// output, scatter's input). An estimate from the OpInfo, which costs less than
// asking every tensor.
bool may_be_large(const OpInfo& info, int group_size) {
  return info.count * element_size(info.dtype) * static_cast<uint64_t>(group_size) >=
         kSingleCopyMinBytes;
}
}  // namespace

// A Work's OpInfo names the group, and the name keeps the recorder alive that
// the Work records its end in (Work::set_recorder). A blocking call whose caller
// waits to the end (not one that may abandon the wait, nor one whose failure
// can leave the Work behind: may_be_large) holds this group until the wait
// returns, by lookup_for_op's cache or its own reference, and the Works it
// leaves in the backend end before close() returns; such a Work borrows the
// name. Sharing it costs two atomic read-modify-writes a call (2 ranks, 8 B
// all_reduce back to back: with the lookup's two, about 5 % of a call).
WorkPtr Group::new_work(OpInfo info, bool caller_outlives_work) {
  info.group = caller_outlives_work ? borrowed_name_ : shared_name_;
  info.seq = next_seq_++;
  recorder_->issued(info);
  auto work = std::allocate_shared<Work>(PoolAllocator<Work>{}, std::move(info));
  work->set_recorder(recorder_.get());
  return work;
}

WorkPtr Group::submit(OpInfo info, std::span<const Tensor* const> keep_alive,
                      FunctionRef<void(Backend&, const WorkPtr&)> launch) {
  std::lock_guard<BiasedMutex> lock(submit_mu_);
  Backend& backend = open_backend(info);
  // A blocking call's caller holds its tensors until the operation has finished;
  // only asynchronous operations need the Work to keep them (each kept tensor
  // costs two atomic reference-count updates), large ones, which may take a
  // single-copy path whose Work must be able to outlive a failure with them
  // (Work::retain_on_failure), and those whose caller may abandon the wait
  // (interruptible_wait.h).
  const bool caller_outlives_work =
      info.blocking && !may_be_large(info, size()) && InterruptibleWaits::current() == nullptr;
  WorkPtr work = new_work(std::move(info), caller_outlives_work);
  if (caller_outlives_work) {
    work->set_caller_holds();
  } else {
    for (const Tensor* t : keep_alive) work->keep_alive(*t);
  }
  launch(backend, work);
  return work;
}

WorkPtr Group::submit_parts(OpInfo info, uint32_t parts,
                            FunctionRef<void(Backend&, const WorkPtr&)> launch) {
  std::lock_guard<BiasedMutex> lock(submit_mu_);
  Backend& backend = open_backend(info);
  // A part that fails ends the Work while the others go on, but they end by
  // close() (drain), as a blocking call's do.
  const bool caller_outlives_work = info.blocking && InterruptibleWaits::current() == nullptr;
  WorkPtr work = new_work(std::move(info), caller_outlives_work);
  work->expect_parts(parts);
  launch(backend, work);
  return work;
}

Backend& Group::open_backend(const OpInfo& info) {
  if (backend_) [[likely]]
    return *backend_;
  OpInfo named = info;
  named.group = shared_name_;
  named.seq = next_seq_;
  throw RuntimeError(named.describe() + ": the group was destroyed (destroy_group or release).");
}

void Group::drain() {
  if (backend_) backend_->drain();
}

void Group::close() {
  std::unique_ptr<Backend> backend;
  {
    std::lock_guard<BiasedMutex> lock(submit_mu_);
    backend = std::move(backend_);
  }
  // Destroyed outside the lock: detaching from the engine waits for its pass.
}

}  // namespace collie::detail
