// collie/handle.h — CommHandle, the handle of an asynchronous operation.
//
// Operations called with async_op=true return immediately with their output
// tensor and a CommHandle; the tensor's contents are valid only after wait()
// returns. wait() blocks until the operation completes (host-blocking, unlike
// MindSpore's stream-level wait) and rethrows the operation's error
// (CommError, TimeoutError, ...). A default-constructed handle is empty: its
// wait() returns at once, as MindSpore's Python-side default handle does.
// Operations on one group complete in the order they were issued.
//
// Example:
//   auto [y, h] = collie::all_reduce(x, collie::ReduceOp::SUM, collie::WORLD, true);
//   do_other_work();          // overlaps with the reduction
//   h.wait();                 // y is ready now
#pragma once

#include <memory>

namespace collie {

class Work;  // internal: one in-flight operation

class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(std::shared_ptr<Work> work) : work_(std::move(work)) {}

  // Blocks until the operation has completed; rethrows its error, every time it is called.
  void wait() const;
  // Like wait() (the calling thread progresses the operation itself), but gives up
  // after `seconds` and returns false if not yet complete (the operation keeps
  // running and still has its own deadline).
  bool wait_for(double seconds) const;
  // True once the operation has finished, successfully or not. Never blocks.
  bool is_completed() const;
  // False for an empty (default) handle.
  explicit operator bool() const { return work_ != nullptr; }

  const std::shared_ptr<Work>& work() const { return work_; }

 private:
  std::shared_ptr<Work> work_;
};

}  // namespace collie
