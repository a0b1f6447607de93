#include "runtime/work.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <mutex>

#include "collie/errors.h"
#include "collie/handle.h"
#include "runtime/futex.h"
#include "runtime/interruptible_wait.h"

namespace collie {

namespace {
// Storage of failed single-copy operations (retain_on_failure()): never freed.
void retain_forever(std::shared_ptr<Storage> storage) {
  static std::mutex mu;
  static auto* retained = new std::vector<std::shared_ptr<Storage>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  retained->push_back(std::move(storage));
}
}  // namespace

// The last part to complete ends the Work, unless a failure ended it before; the
// first part to fail ends it. Parts may finish on different threads (a
// backend's progress thread, a caller driving it), hence atomics: a failing part
// marks the end before it counts itself done, so the part that counts last sees
// the mark through the countdown's acquire-release chain, which also makes every
// part's effects (data received) visible to whoever sees the end. A successful
// part costs one atomic read-modify-write.
bool Work::part_ends_work(bool failed) {
  if (failed) {
    const bool first = !ended_.exchange(true, std::memory_order_acq_rel);
    parts_left_.fetch_sub(1, std::memory_order_acq_rel);
    return first;
  }
  return parts_left_.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
         !ended_.load(std::memory_order_acquire);
}

void Work::complete() {
  if (parts_ > 1 && !part_ends_work(/*failed=*/false)) return;
  if (recorder_) recorder_->finished(info_.seq, {});
  publish_done();
}

void Work::fail(std::exception_ptr error) {
  if (parts_ > 1 && !part_ends_work(/*failed=*/true)) return;
  if (recorder_) {
    std::string what = "unknown error";
    bool comm_failure = false;
    try {
      std::rethrow_exception(error);
    } catch (const CommError& e) {
      what = e.what();
      comm_failure = true;
    } catch (const TimeoutError& e) {
      what = e.what();
      comm_failure = true;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    recorder_->finished(info_.seq, what);
    // A peer died or vanished: show what this rank last did, once per group.
    if (comm_failure) recorder_->report_once();
  }
  if (retain_on_failure_) {
    for (int i = 0; i < kept_; ++i) retain_forever(kept_inline_[i]);
    for (const auto& storage : kept_more_) retain_forever(storage);
  }
  error_ = std::move(error);
  publish_done();
}

// seq_cst on both sides (as in the doorbell): either this sees the sleeper and
// wakes it, or the sleeper's check after announcing itself sees the word. A
// waiter that sees kWaking returns at once, and the engine that completes a
// Work may hold no reference to it (caller_holds), so ~Work waits for kDone:
// the completing thread touches the Work no more after that store.
//
// A blocking call's Work is waited for only by the thread that called (the
// handle it may return is done already), and that thread cannot be asleep on it
// while it completes it, driving the engine itself, as it does for most small
// calls: then a release store does. The seq_cst store is a locked instruction,
// a full barrier (x86 `xchg`): one of the 15 a small collective executed,
// each costing ~1-6 ns here (docs/performance_history.md, "Locked instructions
// counted").
void Work::publish_done() {
  if (info_.blocking && pthread_equal(caller_, pthread_self())) {
    done_.store(kDone, std::memory_order_release);
    return;
  }
  done_.store(kWaking, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) detail::futex_wake(&done_, INT_MAX);
  done_.store(kDone, std::memory_order_release);
}

// Only a Work completed by another thread than its caller is ever kWaking, for
// the few instructions (and maybe a futex wake) between publish_done's stores.
Work::~Work() {
  while (done_.load(std::memory_order_acquire) == kWaking) sched_yield();
}

bool Work::sleep_until_done(const std::chrono::steady_clock::time_point* deadline) {
  // Without a deadline the futex is still waited on in slices: futex waits
  // always carry a timeout (runtime/futex.h).
  constexpr int64_t kSliceNs = 1'000'000'000;
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  bool finished = true;
  while (done_.load(std::memory_order_seq_cst) == kPending) {
    int64_t wait_ns = kSliceNs;
    if (deadline != nullptr) {
      const auto left = *deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        finished = false;
        break;
      }
      wait_ns = std::min<int64_t>(
          wait_ns, std::chrono::duration_cast<std::chrono::nanoseconds>(left).count() + 1);
    }
    detail::futex_wait(&done_, kPending, wait_ns);
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  return finished;
}

ProgressDriver* Work::lock_driver(std::shared_ptr<ProgressDriver>& holder) const {
  if (caller_driver_ != nullptr) return caller_driver_;
  holder = driver_.lock();
  return holder.get();
}

void Work::wait() {
  if (!is_completed()) {
    if (const auto check = detail::InterruptibleWaits::current()) {
      // In slices, with the check between them (interruptible_wait.h); wait_until
      // rethrows the operation's error.
      while (!wait_until(std::chrono::steady_clock::now() +
                         detail::InterruptibleWaits::kCheckInterval)) {
        if (check()) throw detail::WaitInterrupted();
      }
      return;
    }
    std::shared_ptr<ProgressDriver> holder;
    if (ProgressDriver* driver = lock_driver(holder)) driver->drive(*this);
  }
  // The engine enforces each operation's deadline, so this wait always ends.
  if (!is_completed()) sleep_until_done(nullptr);
  if (error_) std::rethrow_exception(error_);
}

bool Work::wait_until(std::chrono::steady_clock::time_point deadline) {
  // Driven like wait(): handing the work to the progress thread and being woken
  // by it costs two context switches per call (a Python call waits in 50 ms
  // slices of this, so that Ctrl-C can interrupt it).
  if (!is_completed()) {
    std::shared_ptr<ProgressDriver> holder;
    if (ProgressDriver* driver = lock_driver(holder)) driver->drive(*this, &deadline);
  }
  if (!is_completed() && !sleep_until_done(&deadline)) return false;
  if (error_) std::rethrow_exception(error_);
  return true;
}

std::exception_ptr Work::error() const { return is_completed() ? error_ : nullptr; }

void CommHandle::wait() const {
  if (work_) work_->wait();
}

bool CommHandle::wait_for(double seconds) const {
  if (!work_) return true;
  // Clamped so the conversion to integer clock ticks cannot overflow (1e300, -inf)
  // or see a nan: both would be undefined behaviour.
  seconds = std::isnan(seconds) ? 0.0 : std::clamp(seconds, 0.0, 1e9);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(seconds));
  return work_->wait_until(deadline);
}

bool CommHandle::is_completed() const { return !work_ || work_->is_completed(); }

}  // namespace collie
