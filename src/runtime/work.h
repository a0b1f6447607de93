// Work: one in-flight operation, completed exactly once by its backend.
//
// The api creates a Work per call (keeping the call's tensors alive while the
// backend uses their memory), the backend completes or fails it from its progress
// engine, and CommHandle::wait() blocks on it. Failures are stored as an
// exception and rethrown by every wait().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "collie/tensor.h"
#include "runtime/flight_recorder.h"
#include "runtime/op_info.h"

namespace collie {

class Work;

// A backend whose operations can be progressed by the thread that waits for
// them (instead of handing off to a progress thread and back). Work::wait() and
// Work::wait_until() call drive() when the backend set one.
class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  // Returns once `work` has completed (successfully or not), or at `deadline`
  // when one is given, whichever comes first.
  virtual void drive(const Work& work,
                     const std::chrono::steady_clock::time_point* deadline = nullptr) = 0;
};

class Work {
 public:
  explicit Work(detail::OpInfo info) : info_(std::move(info)) {}

  const detail::OpInfo& info() const { return info_; }

  // Keeps `t`'s storage alive until the work is destroyed. The first two (an
  // input and an output: every operation) are kept without allocating.
  void keep_alive(const Tensor& t) {
    if (kept_ < 2)
      kept_inline_[kept_++] = t.storage();
    else
      kept_more_.push_back(t.storage());
  }

  // Peers may touch the kept tensors' memory directly (single-copy operations:
  // backends/shm/direct_ops.h) and cannot be stopped if this rank gives up on
  // the operation first (a timeout, another peer's death): a peer still writing
  // into this rank's output would corrupt whatever the memory held next. So when
  // such a work fails, fail() keeps its tensors' storage for the rest of the
  // process instead of letting it be freed and reused. A failure ends the
  // group, so that is a few buffers at most.
  void retain_on_failure() { retain_on_failure_ = true; }

  // Where completion is recorded (set by the choke point).
  void set_recorder(std::shared_ptr<detail::FlightRecorder> recorder) {
    recorder_ = std::move(recorder);
  }

  // The backend that can progress this work from the waiting thread.
  void set_driver(std::weak_ptr<ProgressDriver> driver) { driver_ = std::move(driver); }

  void complete();
  void fail(std::exception_ptr error);

  void wait();
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  bool is_completed() const { return done_flag_.load(std::memory_order_acquire); }
  std::exception_ptr error() const;

 private:
  detail::OpInfo info_;
  std::shared_ptr<Storage> kept_inline_[2];
  int kept_ = 0;
  std::vector<std::shared_ptr<Storage>> kept_more_;
  bool retain_on_failure_ = false;  // set before the backend starts the operation
  // Completion is one atomic flag; the mutex and condition variable serve only
  // threads that sleep in wait() without a driver (counted in sleepers_), so
  // completing an operation nobody sleeps on takes no lock.
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> done_flag_{false};
  std::exception_ptr error_;  // written before done_flag_, read after it
  std::weak_ptr<ProgressDriver> driver_;
  std::shared_ptr<detail::FlightRecorder> recorder_;

  void publish_done();
  // Sleeps on the condition variable until done or `deadline` (if given).
  bool sleep_until_done(const std::chrono::steady_clock::time_point* deadline);
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace collie
