// Work: one in-flight operation, completed exactly once by its backend (once per
// part: expect_parts).
//
// The api creates a Work per call (keeping the call's tensors alive while the
// backend uses their memory), the backend completes or fails it from its progress
// engine, and CommHandle::wait() blocks on it. Failures are stored as an
// exception and rethrown by every wait().
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
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
  explicit Work(detail::OpInfo info)
      : info_(std::move(info)), caller_(info_.blocking ? pthread_self() : pthread_t{}) {}
  // Waits for a thread that completed it to be done with it (publish_done).
  ~Work();
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  const detail::OpInfo& info() const { return info_; }
  // The caller of a blocking call holds this Work until it has completed and
  // never abandons the wait (Group::submit decides, before the backend starts):
  // a backend may then refer to it by a plain pointer instead of sharing it.
  void set_caller_holds() { caller_holds_ = true; }
  bool caller_holds() const { return caller_holds_; }

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

  // Where completion is recorded (set by the choke point). Not owned: it must
  // outlive this Work, as the group's recorder does because the OpInfo's group
  // name shares its ownership (Group). Every reference held here would cost two
  // atomic read-modify-writes per call (about 5 ns each, a tenth of a small
  // collective between them all).
  void set_recorder(detail::FlightRecorder* recorder) { recorder_ = recorder; }

  // The backend that can progress this work from the waiting thread. A blocking
  // call's Work is waited for only by its caller, which holds the group, and so
  // the backend, until the wait returns: a plain pointer will do. An
  // asynchronous Work may be waited for after its group is gone: a weak one.
  template <typename Driver>
  void set_driver(const std::shared_ptr<Driver>& driver) {
    if (info_.blocking) {
      caller_driver_ = driver.get();
    } else {
      driver_ = driver;
    }
  }

  // A Work that covers several transfers (a batch_isend_irecv run): the backend
  // completes or fails each of the `parts` as if it were a Work of its own. The
  // Work ends when the last part completes, or at once when a part fails; the
  // other parts then go on in the background, so whoever returns on that error
  // must keep their tensors alive (keep_alive). Called before the backend
  // starts; one part (the default) costs complete() and fail() nothing extra.
  void expect_parts(uint32_t parts) {
    parts_ = parts;
    parts_left_.store(parts, std::memory_order_relaxed);
  }

  void complete();
  void fail(std::exception_ptr error);

  void wait();
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  bool is_completed() const { return done_.load(std::memory_order_acquire) != kPending; }
  std::exception_ptr error() const;

 private:
  detail::OpInfo info_;
  std::shared_ptr<Storage> kept_inline_[2];
  int kept_ = 0;
  std::vector<std::shared_ptr<Storage>> kept_more_;
  bool retain_on_failure_ = false;  // set before the backend starts the operation
  bool caller_holds_ = false;       // set_caller_holds(), before the backend starts
  uint32_t parts_ = 1;              // expect_parts(), before the backend starts
  std::atomic<uint32_t> parts_left_{1};
  std::atomic<bool> ended_{false};  // of a Work of several parts: its end was published
  // Completion is one word: kPending, then kDone, or kWaking first while a
  // thread other than the caller wakes sleepers (publish_done). Threads that
  // wait without a driver sleep on it (a futex; counted in sleepers_), so
  // completing an operation nobody sleeps on is one store and one load, and a
  // Work has no mutex or condition variable to build and tear down (destroying
  // a condition variable is an atomic read-modify-write).
  static constexpr uint32_t kPending = 0, kWaking = 1, kDone = 2;
  std::atomic<uint32_t> done_{kPending};
  std::atomic<uint32_t> sleepers_{0};
  std::exception_ptr error_;                 // written before done_, read after it
  // A blocking call's thread, its only waiter (publish_done); unset otherwise.
  pthread_t caller_;
  ProgressDriver* caller_driver_ = nullptr;  // blocking calls (set_driver)
  std::weak_ptr<ProgressDriver> driver_;     // asynchronous ones
  detail::FlightRecorder* recorder_ = nullptr;

  void publish_done();
  // Whether a part's completion (failed: its failure) ends a Work of several parts.
  bool part_ends_work(bool failed);
  // Sleeps on done_ until done or `deadline` (if given).
  bool sleep_until_done(const std::chrono::steady_clock::time_point* deadline);
  // The driver to progress this work with, if any; `holder` keeps a weakly held
  // one alive meanwhile.
  ProgressDriver* lock_driver(std::shared_ptr<ProgressDriver>& holder) const;
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace collie
