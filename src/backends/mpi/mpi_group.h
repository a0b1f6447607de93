// MpiGroup: one collie group on MPI: its communicator and its engine-side state.
//
// The communicator's rank i is world_ranks[i] (built by MPI_Comm_create_group in
// that order), so collie's group ranks are MPI ranks of `comm` and point-to-point
// tags live in the group's own matching space. The queue and failure state belong
// to the progress thread; `outstanding` (with its mutex) is how other threads wait
// for the group to drain.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/mpi/task.h"

namespace collie::detail {

struct MpiGroup {
  std::string name;
  std::vector<int> world_ranks;
  int rank = 0;
  double timeout_seconds = 300;
  MPI_Comm comm = MPI_COMM_NULL;

  int size() const { return static_cast<int>(world_ranks.size()); }

  // --- progress thread only ---
  std::deque<std::unique_ptr<Task>> queue;  // collectives in issue order; the front is in flight
  std::string failure;                      // set when a collective failed: the group is unusable
  std::set<int> broken_send_peers;          // a send to them timed out and may still be delivered

  // --- any thread ---
  void add_outstanding() {
    std::lock_guard<std::mutex> lock(mu);
    ++outstanding;
  }
  void finished_one() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --outstanding;
    }
    cv.notify_all();
  }
  // Every operation has a deadline that the engine enforces, so this returns.
  void wait_drained() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return outstanding == 0; });
  }

 private:
  std::mutex mu;
  std::condition_variable cv;
  size_t outstanding = 0;  // submitted and not yet finished
};

}  // namespace collie::detail
