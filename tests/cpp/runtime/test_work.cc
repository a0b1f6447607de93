// Work: which tensors a finished operation keeps (src/runtime/work.h). A work
// whose peers may still touch its tensors directly keeps them after a failure
// (retain_on_failure); otherwise they go with the work. And how it is waited
// for: driven by its backend's driver where it has one (held weakly for
// asynchronous works), else asleep on its completion word until another thread
// completes it or the deadline passes. A work of several parts (a
// batch_isend_irecv run) ends when its last part completes or its first fails,
// and is recorded once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collie/errors.h"
#include "runtime/interruptible_wait.h"
#include "runtime/work.h"

namespace collie {
namespace {

// A work that kept two tensors, one beyond the inline pair, and was given up by
// the test; `storages` watch whether their memory is still allocated.
struct Watched {
  std::weak_ptr<Storage> storages[3];
  WorkPtr work = std::make_shared<Work>(detail::OpInfo{});
  Watched() {
    for (auto& weak : storages) {
      Tensor t = Tensor::ones({16});
      work->keep_alive(t);
      weak = t.storage();
    }
  }
  int alive() const {
    int n = 0;
    for (const auto& weak : storages) n += weak.expired() ? 0 : 1;
    return n;
  }
};

std::exception_ptr timeout() {
  return std::make_exception_ptr(TimeoutError("all_reduce: rank 1 did not arrive"));
}

TEST(Work, KeptTensorsGoWithTheWork) {
  Watched w;
  EXPECT_EQ(w.alive(), 3);
  w.work->complete();
  w.work.reset();
  EXPECT_EQ(w.alive(), 0);
}

TEST(Work, AFailedWorkReleasesItsTensorsUnlessPeersMayTouchThem) {
  Watched w;
  w.work->fail(timeout());
  w.work.reset();
  EXPECT_EQ(w.alive(), 0);
}

TEST(Work, AFailedSingleCopyWorkKeepsItsTensorsForGood) {
  Watched w;
  w.work->retain_on_failure();
  w.work->fail(timeout());
  EXPECT_THROW(w.work->wait(), TimeoutError);
  w.work.reset();
  EXPECT_EQ(w.alive(), 3);
}

TEST(Work, ASucceededSingleCopyWorkReleasesItsTensors) {
  Watched w;
  w.work->retain_on_failure();
  w.work->complete();
  w.work.reset();
  EXPECT_EQ(w.alive(), 0);
}

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

detail::OpInfo blocking_info(bool blocking) {
  detail::OpInfo info;
  info.blocking = blocking;
  return info;
}

// Completes `work` from another thread after `delay` (joined on destruction).
class LateCompletion {
 public:
  LateCompletion(WorkPtr work, std::chrono::milliseconds delay, std::exception_ptr error = nullptr)
      : thread_([work = std::move(work), delay, error] {
          std::this_thread::sleep_for(delay);
          if (error)
            work->fail(error);
          else
            work->complete();
        }) {}
  ~LateCompletion() { thread_.join(); }

 private:
  std::thread thread_;
};

TEST(Work, AWaiterWithoutDriverSleepsUntilAnotherThreadCompletesTheWork) {
  auto work = std::make_shared<Work>(blocking_info(false));
  EXPECT_FALSE(work->is_completed());
  const auto start = Clock::now();
  {
    LateCompletion later(work, 30ms);
    work->wait();
  }
  EXPECT_TRUE(work->is_completed());
  EXPECT_GE(Clock::now() - start, 30ms);
}

// A thread may complete a Work it holds no reference to (a small blocking
// call's operation: Work::caller_holds) while the Work's last holder drops it
// the moment it sees it done: here a waiter asleep on it, which the completing
// thread must wake. ~Work waits until the completing thread is done with it;
// under ASan (scripts/sanitize.sh runs this file) an access after the free
// would fail the test.
TEST(Work, ItsLastHolderMayDropItTheMomentAnotherThreadCompletesIt) {
  for (int round = 0; round < 2000; ++round) {
    auto work = std::make_shared<Work>(blocking_info(false));
    Work* completing = work.get();
    std::atomic<bool> waiting{false};
    std::thread waiter([held = std::move(work), &waiting]() mutable {
      waiting.store(true);
      held->wait();
      EXPECT_TRUE(held->is_completed());
      held.reset();
    });
    while (!waiting.load()) std::this_thread::yield();
    if (round % 2 == 0) std::this_thread::sleep_for(50us);  // asleep, or on its way
    completing->complete();
    waiter.join();
  }
}

TEST(Work, AWaiterWithoutDriverSeesTheFailure) {
  auto work = std::make_shared<Work>(blocking_info(false));
  LateCompletion later(work, 10ms, timeout());
  EXPECT_THROW(work->wait(), TimeoutError);
}

TEST(Work, WaitUntilGivesUpAtTheDeadlineAndSucceedsOnceCompleted) {
  auto work = std::make_shared<Work>(blocking_info(false));
  const auto start = Clock::now();
  EXPECT_FALSE(work->wait_until(start + 20ms));
  EXPECT_GE(Clock::now() - start, 20ms);
  EXPECT_FALSE(work->wait_until(start));  // a deadline already past
  LateCompletion later(work, 10ms);
  EXPECT_TRUE(work->wait_until(Clock::now() + 10s));
  EXPECT_TRUE(work->is_completed());
}

// Completes the work it is asked to drive (from the waiting thread).
class CompletingDriver : public ProgressDriver {
 public:
  WorkPtr work;
  int drives = 0;
  void drive(const Work&, const Clock::time_point*) override {
    ++drives;
    work->complete();
  }
};

TEST(Work, ABlockingWorkIsDrivenByTheDriverItWasGiven) {
  auto work = std::make_shared<Work>(blocking_info(true));
  auto driver = std::make_shared<CompletingDriver>();
  driver->work = work;
  work->set_driver(driver);
  work->wait();
  EXPECT_EQ(driver->drives, 1);
  work->wait();  // completed: not driven again
  EXPECT_EQ(driver->drives, 1);
  driver->work.reset();
}

TEST(Work, AnAsynchronousWorkOutlivesItsDriverAndThenSleeps) {
  auto work = std::make_shared<Work>(blocking_info(false));
  auto driver = std::make_shared<CompletingDriver>();
  driver->work = work;
  work->set_driver(driver);
  EXPECT_TRUE(work->wait_until(Clock::now() + 10s));
  EXPECT_EQ(driver->drives, 1);

  // A driver that is gone is not called: the waiter sleeps until completion.
  auto second = std::make_shared<Work>(blocking_info(false));
  {
    auto gone = std::make_shared<CompletingDriver>();
    second->set_driver(gone);
  }
  LateCompletion later(second, 10ms);
  second->wait();
  EXPECT_TRUE(second->is_completed());
  driver->work.reset();
}

// Inside an InterruptibleWaits scope a wait checks between 50 ms slices: it throws
// WaitInterrupted once the check says so, and otherwise waits on to completion.
// Scopes nest (the inner one's check applies) and end with their block.
TEST(Work, AWaitInAnInterruptibleScopeEndsWhenItsCheckSaysSo) {
  static std::atomic<int> checks{0};
  checks = 0;
  auto work = std::make_shared<Work>(blocking_info(true));
  {
    detail::InterruptibleWaits outer(+[] { return false; });
    detail::InterruptibleWaits scope(+[] { return ++checks == 2; });
    const auto start = Clock::now();
    EXPECT_THROW(work->wait(), detail::WaitInterrupted);
    EXPECT_EQ(checks.load(), 2);
    EXPECT_GE(Clock::now() - start, 2 * detail::InterruptibleWaits::kCheckInterval);
    EXPECT_FALSE(work->is_completed()) << "abandoned, not cancelled";
  }
  EXPECT_EQ(detail::InterruptibleWaits::current(), nullptr);
  {
    detail::InterruptibleWaits patient(+[] { return false; });
    LateCompletion later(work, 120ms, timeout());
    EXPECT_THROW(work->wait(), TimeoutError) << "the operation's own error, after slices";
  }
}

// A work of three parts, recorded in `recorder` as seq 1.
struct ThreeParts {
  detail::FlightRecorder recorder{"g", 0, 4};
  WorkPtr work;
  ThreeParts() {
    detail::OpInfo info;
    info.kind = detail::OpKind::BatchP2P;
    info.count = 3;
    info.seq = 1;
    info.blocking = true;
    recorder.issued(info);
    work = std::make_shared<Work>(info);
    work->set_recorder(&recorder);
    work->expect_parts(3);
  }
  int recorded(const std::string& state) const {
    const std::string d = recorder.dump();
    int n = 0;
    for (size_t at = d.find(state); at != std::string::npos; at = d.find(state, at + 1)) ++n;
    return n;
  }
};

TEST(Work, AWorkOfSeveralPartsEndsWhenItsLastPartCompletes) {
  ThreeParts t;
  t.work->complete();
  t.work->complete();
  EXPECT_FALSE(t.work->is_completed()) << "two of three parts";
  EXPECT_EQ(t.recorded("completed"), 0);
  t.work->complete();
  EXPECT_TRUE(t.work->is_completed());
  EXPECT_EQ(t.work->error(), nullptr);
  EXPECT_EQ(t.recorded("completed"), 1) << t.recorder.dump();
  t.work->wait();
}

TEST(Work, AWorkOfSeveralPartsEndsAtItsFirstFailure) {
  ThreeParts t;
  t.work->complete();
  t.work->fail(timeout());
  EXPECT_TRUE(t.work->is_completed()) << "the failure ends it, one part still going on";
  EXPECT_THROW(t.work->wait(), TimeoutError);
  // The last part's end changes nothing: the error stays, recorded once.
  t.work->fail(std::make_exception_ptr(CommError("a later error")));
  EXPECT_THROW(t.work->wait(), TimeoutError);
  EXPECT_EQ(t.recorded("FAILED"), 1) << t.recorder.dump();
  EXPECT_EQ(t.recorded("completed"), 0) << t.recorder.dump();
  EXPECT_EQ(t.recorded("a later error"), 0) << t.recorder.dump();

  ThreeParts last_fails;
  last_fails.work->complete();
  last_fails.work->complete();
  last_fails.work->fail(timeout());
  EXPECT_THROW(last_fails.work->wait(), TimeoutError);
  EXPECT_EQ(last_fails.recorded("FAILED"), 1);
}

// Parts completed on two threads at once: the work ends once, after both, and the
// waiter sees what each part wrote before completing (ThreadSanitizer checks the
// ordering in the sanitizer run).
TEST(Work, PartsCompletedOnTwoThreadsEndTheWorkOnceAfterBoth) {
  constexpr int kWorks = 2000;
  std::vector<WorkPtr> works;
  std::vector<int> written(2 * kWorks, 0);
  for (int i = 0; i < kWorks; ++i) {
    works.push_back(std::make_shared<Work>(blocking_info(false)));
    works.back()->expect_parts(2);
  }
  auto part = [&](int which) {
    for (int i = 0; i < kWorks; ++i) {
      written[static_cast<size_t>(2 * i + which)] = i + 1;
      works[static_cast<size_t>(i)]->complete();
    }
  };
  std::thread a(part, 0), b(part, 1);
  for (int i = 0; i < kWorks; ++i) {
    works[static_cast<size_t>(i)]->wait();
    ASSERT_EQ(written[static_cast<size_t>(2 * i)], i + 1);
    ASSERT_EQ(written[static_cast<size_t>(2 * i + 1)], i + 1);
  }
  a.join();
  b.join();
}

}  // namespace
}  // namespace collie
