// OpState: an operation the progress engine advances without ever blocking.
//
// advance() does all the work it can with the data peers have published so far
// and returns whether it finished, moved forward, or is blocked on peers. When an
// operation stays blocked, the engine asks blocked_on() which world ranks it is
// waiting for, to check their liveness and to name them in errors.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/small_pool.h"
#include "runtime/work.h"

namespace collie::detail {

enum class Progress { Blocked, Advanced, Done };

class OpState {
 public:
  // Takes a reference to `work` only where its caller may let go of it before
  // the operation finishes (Work::caller_holds): a small blocking call's
  // operation refers to its Work by a plain pointer, so that making and
  // finishing it updates no reference count (two locked instructions a call;
  // docs/performance_history.md, "Locked instructions after a step is
  // published").
  explicit OpState(const WorkPtr& work)
      : work_(work.get()), owner_(work->caller_holds() ? nullptr : work) {}
  virtual ~OpState() = default;
  // Every call makes one and drops it: from the per-thread pool, not malloc.
  static void* operator new(size_t bytes) { return pool_alloc(bytes); }
  static void operator delete(void* block, size_t bytes) { pool_free(block, bytes); }

  virtual Progress advance() = 0;
  // World ranks this operation is waiting for right now.
  virtual std::vector<int> blocked_on() const = 0;
  // For a blocked op whose peers are all dead: true if data already published
  // could still let it finish (e.g. bytes left in a ring from a peer that exited).
  virtual bool can_finish_without_peers() const { return false; }

  Work* work() const { return work_; }
  std::chrono::steady_clock::time_point last_progress;
  std::chrono::steady_clock::time_point deadline;

 private:
  Work* work_;
  WorkPtr owner_;  // empty when the caller holds the Work (above)
};

}  // namespace collie::detail
