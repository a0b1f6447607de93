// Task: something the MPI progress engine advances without blocking.
//
// A task is a chain of phases. Each phase does local work and/or starts
// nonblocking MPI calls (MPI_Iallreduce, MPI_Isend, ...) whose requests it adds
// with post(); the engine polls them with MPI_Test/MPI_Testsome and runs the next
// phase once all have completed. A phase may read the statuses of the previous
// phase's requests (a receive checks its size). When the last phase has run and
// its requests completed, the task finishes: an operation completes its Work, an
// engine-internal task (building a communicator) fulfils a future.
//
// Phases run on the progress thread only, so they may call MPI freely.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "runtime/work.h"

namespace collie::detail {

class Task {
 public:
  using Phase = std::function<void(Task&)>;
  using Clock = std::chrono::steady_clock;

  // An operation: finishing completes (or fails) `work`.
  explicit Task(WorkPtr work);
  // Engine-internal: finishing fulfils future(); `label` names it in errors.
  explicit Task(std::string label);
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task();

  void then(Phase phase) { phases_.push_back(std::move(phase)); }

  // --- inside a phase ---
  // A request slot for one nonblocking MPI call: MPI_Ibcast(..., t.post()).
  MPI_Request* post();
  // Statuses of the previous phase's requests, in post() order.
  const std::vector<MPI_Status>& statuses() const { return prev_statuses_; }
  // Uninitialised memory that lives as long as the task, from the block cache
  // (core/block_cache.h), as tensors' storage is: a large one is a block an
  // earlier task or tensor gave back, its pages already there.
  uint8_t* scratch(size_t bytes);
  // Storage for MPI's count / displacement arrays that lives as long as the task.
  std::vector<int>& ints(size_t n);

  // --- engine ---
  // Runs phases until one posts requests (returns false) or none are left (true).
  bool run_phases();
  // Requests of the current phase; completed ones are MPI_REQUEST_NULL.
  std::vector<MPI_Request>& requests() { return requests_; }
  std::vector<MPI_Status>& statuses_mut() { return statuses_; }
  bool all_requests_done() const;
  void finish(std::exception_ptr error);
  bool finished() const { return finished_; }
  // "all_reduce(sum) float32 x7 on group 'g' seq 3", or the label.
  std::string describe() const;
  // An operation's description in its errors, instead of its Work's (one
  // transfer of a batch: OpInfo::describe_transfer).
  void describe_as(std::string what) { label_ = std::move(what); }
  // The caller waits on this operation right now (latency matters more than CPU).
  bool blocking() const;
  // The operation's Work (null for an engine-internal task).
  const WorkPtr& work() const { return work_; }
  std::future<void> future() { return promise_.get_future(); }

  // What a stalled task waits for, for timeout messages (set by tasks that know).
  std::function<std::string()> waiting_for;
  Clock::time_point deadline{};
  double timeout_seconds = 0;
  bool started = false;
  // Set by a phase before it throws when every rank fails alike at that point with
  // nothing in flight (a checked precondition): the group remains usable.
  bool keeps_group_usable = false;

 private:
  WorkPtr work_;
  std::string label_;
  std::promise<void> promise_;
  std::vector<Phase> phases_;
  size_t next_ = 0;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
  std::vector<MPI_Status> prev_statuses_;
  struct Block {
    void* data;
    size_t capacity;
  };
  std::vector<Block> scratch_;
  std::deque<std::vector<int>> ints_;
  bool finished_ = false;
};

}  // namespace collie::detail
