#include "backends/shm/cma_if_huge_pages.h"

#include <utility>
#include <vector>

#include "backends/shm/huge_page_probe.h"
#include "backends/shm/step_op.h"

namespace collie::detail {
namespace {

// Marks the answer's step in the fingerprint: a rank waiting for the answer
// while a peer already moves data (calls that differ) fails loudly.
constexpr uint8_t kAnswerVariant = 7;

// One step in the step line: the root publishes 1 if its input lies on huge
// pages; every rank reads the root's byte.
class RootAnswerOp final : public StepOp {
 public:
  RootAnswerOp(const CollectiveCall& c, bool on_huge_pages, int root)
      : StepOp(*c.engine, *c.group, c.work, 1), on_huge_pages_(on_huge_pages), root_(root) {
    set_variant(kAnswerVariant);
    place_small(1);
  }
  bool root_on_huge_pages() const { return on_huge_pages_; }

 protected:
  void produce(size_t, uint8_t* line) override { line[0] = on_huge_pages_ ? 1 : 0; }
  void consume(size_t, const std::vector<const uint8_t*>& lines) override {
    on_huge_pages_ = lines[static_cast<size_t>(root_)][0] == 1;
  }

 private:
  bool on_huge_pages_;  // this rank's answer; the root's once consumed
  int root_;
};

// The answer, then the op it chose, as one operation of the group's queue.
class AnswerThenMoveOp final : public OpState {
 public:
  AnswerThenMoveOp(const CollectiveCall& c, bool on_huge_pages, int root,
                   OpAfterAnswer after_answer)
      : OpState(c.work),
        work_(c.work),
        engine_(c.engine),
        group_(c.group),
        answer_(std::make_unique<RootAnswerOp>(c, on_huge_pages, root)),
        after_answer_(std::move(after_answer)) {}

  Progress advance() override {
    if (move_) return move_->advance();
    const Progress answered = answer_->advance();
    if (answered != Progress::Done) return answered;
    move_ = after_answer_(CollectiveCall{engine_, group_, work_}, answer_->root_on_huge_pages());
    answer_.reset();
    return move_->advance() == Progress::Done ? Progress::Done : Progress::Advanced;
  }
  std::vector<int> blocked_on() const override {
    return move_ ? move_->blocked_on() : answer_->blocked_on();
  }
  bool can_finish_without_peers() const override {
    return move_ ? move_->can_finish_without_peers() : answer_->can_finish_without_peers();
  }

 private:
  WorkPtr work_;  // for the op made after the answer (which takes a reference as it needs)
  ShmEngine* engine_;
  ShmGroup* group_;
  std::unique_ptr<RootAnswerOp> answer_;
  OpAfterAnswer after_answer_;
  std::unique_ptr<OpState> move_;  // made once the root has answered
};

}  // namespace

std::unique_ptr<OpState> make_cma_if_root_on_huge_pages(CollectiveCall c, const void* in,
                                                        size_t in_bytes, int root,
                                                        OpAfterAnswer after_answer) {
  // Only the root asks the kernel (1-6 us); the others' bytes are never read.
  const bool on_huge_pages = c.group->rank() == root && lies_on_huge_pages(in, in_bytes);
  return std::make_unique<AnswerThenMoveOp>(c, on_huge_pages, root, std::move(after_answer));
}

}  // namespace collie::detail
