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
  explicit OpState(WorkPtr work) : work_(std::move(work)) {}
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

  const WorkPtr& work() const { return work_; }
  std::chrono::steady_clock::time_point last_progress;
  std::chrono::steady_clock::time_point deadline;

 private:
  WorkPtr work_;
};

}  // namespace collie::detail
