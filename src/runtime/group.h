// Group: a named set of world ranks, and the choke point every operation passes.
//
// world_ranks is the ONE world<->group map: group rank i is world_ranks[i], in the
// order given to create_group. submit() is where every operation goes through
// (submit_parts() for a batch_isend_irecv run of several transfers): it stamps
// the group's next sequence number, creates the Work that keeps the operation's
// tensors alive, and hands it to the backend, all under one lock so that
// operations reach the backend in sequence order.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/biased_mutex.h"
#include "runtime/flight_recorder.h"
#include "runtime/function_ref.h"
#include "runtime/work.h"

namespace collie::detail {

class Group {
 public:
  Group(std::string name, std::vector<int> world_ranks, int my_world_rank, double timeout_seconds,
        std::unique_ptr<Backend> backend);
  ~Group();

  const std::string& name() const { return name_; }
  const std::vector<int>& world_ranks() const { return world_ranks_; }
  int size() const { return static_cast<int>(world_ranks_.size()); }
  // This process's group rank, -1 if it is not a member (group only recorded).
  int rank() const { return rank_; }
  bool is_member() const { return rank_ >= 0; }
  double timeout_seconds() const { return timeout_seconds_; }
  // Group rank of a world rank, -1 if not a member. Every p2p call and rooted
  // collective asks; in a group whose ranks are the world's in order (the world
  // itself) it is a range check, not a search (std::find's unrolled set-up:
  // ~25 instructions a lookup at 2 ranks, two lookups per exchange).
  int group_rank_of(int world_rank) const {
    if (ranks_are_world_ranks_) {
      return static_cast<unsigned>(world_rank) < world_ranks_.size() ? world_rank : -1;
    }
    return find_group_rank(world_rank);
  }
  // `rows` split into size() equal parts: rows per rank, or -1 if size() does not
  // divide `rows` (rows >= 0). A shift and a mask for groups of a power-of-two
  // size: reduce_scatter, scatter and all_to_all split on every call, and a 64-bit
  // division takes up to tens of cycles (2 ranks, 8 B back to back: reduce_scatter
  // ~0.38 -> ~0.37 us; all_to_all, two splits, unchanged within the noise).
  int64_t rows_per_rank(int64_t rows) const {
    if (size_shift_ >= 0) {
      return (rows & ((int64_t{1} << size_shift_) - 1)) != 0 ? -1 : rows >> size_shift_;
    }
    return rows % size() != 0 ? -1 : rows / size();
  }

  // The choke point. `launch` is called with the backend and the new Work, which
  // keeps the storage of the `keep_alive` tensors alive until it is destroyed
  // (asynchronous operations only: a blocking caller holds them itself).
  WorkPtr submit(OpInfo info, std::span<const Tensor* const> keep_alive,
                 FunctionRef<void(Backend&, const WorkPtr&)> launch);
  WorkPtr submit(OpInfo info, std::initializer_list<const Tensor*> keep_alive,
                 FunctionRef<void(Backend&, const WorkPtr&)> launch) {
    return submit(std::move(info),
                  std::span<const Tensor* const>(keep_alive.begin(), keep_alive.size()), launch);
  }
  // The choke point for one call of several transfers (a batch_isend_irecv run on
  // this group): one sequence number and one Work of `parts` parts
  // (Work::expect_parts), which `launch` hands to the backend once per transfer.
  // Blocking calls only: the caller holds the tensors.
  WorkPtr submit_parts(OpInfo info, uint32_t parts,
                       FunctionRef<void(Backend&, const WorkPtr&)> launch);

  // Waits until every operation issued on this group has finished.
  void drain();
  // Detaches the group from its backend (destroy_group, release), after drain():
  // later calls fail with a RuntimeError. The Group itself may live on a while,
  // held by a thread's lookup cache (lookup_for_op), as a closed shell.
  void close();

  const FlightRecorder& recorder() const { return *recorder_; }

 private:
  std::string name_;
  // Stamped on every OpInfo: the recorder's copy of name_, owned with it, or
  // (borrowed_name_) the same name without ownership, for the Works that never
  // outlive their caller's hold on this group (new_work).
  std::shared_ptr<const std::string> shared_name_;
  std::shared_ptr<const std::string> borrowed_name_;
  std::vector<int> world_ranks_;
  int size_shift_ = -1;  // log2(size()) for a power-of-two size, else -1 (rows_per_rank)
  bool ranks_are_world_ranks_ = false;  // world_ranks_[i] == i for every i
  int find_group_rank(int world_rank) const;
  int rank_;
  double timeout_seconds_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<FlightRecorder> recorder_;
  BiasedMutex submit_mu_;  // one thread submits, as a rule: biased to it
  uint64_t next_seq_ = 1;

  // Stamps `info` and makes its Work (submit_mu_ held); `caller_outlives_work`
  // as new_work's comment says.
  WorkPtr new_work(OpInfo info, bool caller_outlives_work);
  // The backend, or a RuntimeError naming the call if close() ran (submit_mu_ held).
  Backend& open_backend(const OpInfo& info);
};

}  // namespace collie::detail
