// Work: which tensors a finished operation keeps (src/runtime/work.h). A work
// whose peers may still touch its tensors directly keeps them after a failure
// (retain_on_failure); otherwise they go with the work.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

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

}  // namespace
}  // namespace collie
