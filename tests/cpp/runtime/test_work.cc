// Work: which tensors a finished operation keeps (src/runtime/work.h). A work
// whose peers may still touch its tensors directly keeps them after a failure
// (retain_on_failure); otherwise they go with the work. And how it is waited
// for: driven by its backend's driver where it has one (held weakly for
// asynchronous works), else asleep on its completion word until another thread
// completes it or the deadline passes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include "collie/errors.h"
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

}  // namespace
}  // namespace collie
