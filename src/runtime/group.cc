#include "runtime/group.h"

#include <algorithm>
#include <bit>

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

WorkPtr Group::new_work(OpInfo info) {
  info.group = shared_name_;
  info.seq = next_seq_++;
  recorder_->issued(info);
  auto work = std::allocate_shared<Work>(PoolAllocator<Work>{}, std::move(info));
  work->set_recorder(recorder_.get());
  return work;
}

WorkPtr Group::submit(OpInfo info, std::span<const Tensor* const> keep_alive,
                      FunctionRef<void(Backend&, const WorkPtr&)> launch) {
  std::lock_guard<FutexMutex> lock(submit_mu_);
  WorkPtr work = new_work(std::move(info));
  // A blocking call's caller holds its tensors until the operation has finished;
  // only asynchronous operations need the Work to keep them (each kept tensor
  // costs two atomic reference-count updates), large ones, which may take a
  // single-copy path whose Work must be able to outlive a failure with them
  // (Work::retain_on_failure), and those whose caller may abandon the wait
  // (interruptible_wait.h).
  if (!work->info().blocking || may_be_large(work->info(), size()) ||
      InterruptibleWaits::current() != nullptr) {
    for (const Tensor* t : keep_alive) work->keep_alive(*t);
  }
  launch(*backend_, work);
  return work;
}

WorkPtr Group::submit_parts(OpInfo info, uint32_t parts,
                            FunctionRef<void(Backend&, const WorkPtr&)> launch) {
  std::lock_guard<FutexMutex> lock(submit_mu_);
  WorkPtr work = new_work(std::move(info));
  work->expect_parts(parts);
  launch(*backend_, work);
  return work;
}

void Group::drain() {
  if (backend_) backend_->drain();
}

}  // namespace collie::detail
