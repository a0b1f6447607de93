// OpState's hold on its Work (backends/shm/op_state.h): a reference only where
// the caller may let go first. A small blocking call's operation refers to its
// Work by a plain pointer, so finishing it updates no reference count.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backends/shm/op_state.h"

namespace collie::detail {
namespace {

class NoOp final : public OpState {
 public:
  using OpState::OpState;
  Progress advance() override { return Progress::Done; }
  std::vector<int> blocked_on() const override { return {}; }
};

WorkPtr new_work(bool caller_holds) {
  OpInfo info;
  info.blocking = caller_holds;
  auto work = std::make_shared<Work>(info);
  if (caller_holds) work->set_caller_holds();
  return work;
}

TEST(OpState, SharesItsWorkUnlessTheCallerHoldsIt) {
  for (bool caller_holds : {false, true}) {
    const WorkPtr work = new_work(caller_holds);
    {
      NoOp op(work);
      EXPECT_EQ(op.work(), work.get());
      EXPECT_EQ(work.use_count(), caller_holds ? 1 : 2) << "caller holds " << caller_holds;
    }
    EXPECT_EQ(work.use_count(), 1);
  }
}

// Where it shares it, the Work outlives the caller's reference.
TEST(OpState, KeepsASharedWorkAliveAfterTheCallerLetsGo) {
  WorkPtr work = new_work(/*caller_holds=*/false);
  NoOp op(work);
  work.reset();
  op.work()->complete();
  EXPECT_TRUE(op.work()->is_completed());
}

}  // namespace
}  // namespace collie::detail
