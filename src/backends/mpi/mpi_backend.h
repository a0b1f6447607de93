// MpiBackend: the Backend of one group on the MPI engine.
//
// Each call becomes a Task (operations.h) on the group's communicator, queued on
// the engine (collectives in issue order, point-to-point at once), and returns.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/mpi/datatypes.h"
#include "backends/mpi/engine.h"
#include "backends/mpi/mpi_group.h"

namespace collie::detail {

class MpiBackend final : public Backend {
 public:
  MpiBackend(MpiEngine& engine, std::shared_ptr<MpiGroup> group, ReductionMode mode);
  ~MpiBackend() override;  // drains, then the engine frees the communicator

  void all_reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                  ReduceOp op) override;
  void all_gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype) override;
  void reduce_scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                      ReduceOp op) override;
  void reduce(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype, ReduceOp op,
              int root) override;
  void broadcast(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
                 int root) override;
  void gather(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
              int root) override;
  void scatter(const WorkPtr& w, const void* in, void* out, size_t count, DType dtype,
               int root) override;
  void barrier(const WorkPtr& w) override;
  void all_to_all(const WorkPtr& w, const AllToAllInput& in, CountSpan send_counts, void* out,
                  CountSpan recv_counts, DType dtype) override;
  void send(const WorkPtr& w, const void* in, size_t count, DType dtype, int peer,
            int tag) override;
  void recv(const WorkPtr& w, void* out, size_t count, DType dtype, int peer, int tag) override;
  void drain() override;

 private:
  void collective(std::unique_ptr<Task> task) {
    engine_.submit_collective(group_, std::move(task));
  }

  MpiEngine& engine_;
  std::shared_ptr<MpiGroup> group_;
  ReductionMode mode_;
};

}  // namespace collie::detail
