#include "backends/mpi/mpi_transport.h"

#include "backends/mpi/comm_setup.h"
#include "backends/mpi/datatypes.h"
#include "backends/mpi/engine.h"
#include "backends/mpi/mpi_backend.h"
#include "collie/errors.h"
#include "collie/runtime.h"

namespace collie::detail {
namespace {

class MpiTransport final : public Transport {
 public:
  MpiTransport(const LaunchEnv& env, MpiEngine& engine, ReductionMode mode)
      : env_(env), engine_(engine), mode_(mode) {}

  std::string name() const override { return "mpi"; }

  std::unique_ptr<Backend> create_world(double timeout_seconds) override {
    auto result = std::make_shared<CommResult>();
    engine_.submit_control(make_world_setup(result), timeout_seconds).get();
    control_ = result->control;
    auto g = std::make_shared<MpiGroup>();
    g->name = std::string(WORLD);
    g->world_ranks.resize(static_cast<size_t>(env_.world_size));
    for (int i = 0; i < env_.world_size; ++i) g->world_ranks[static_cast<size_t>(i)] = i;
    g->rank = env_.rank;
    g->timeout_seconds = timeout_seconds;
    g->comm = result->comm;
    return std::make_unique<MpiBackend>(engine_, std::move(g), mode_);
  }

  std::unique_ptr<Backend> create_group(const GroupSpec& spec) override {
    auto result = std::make_shared<CommResult>();
    engine_
        .submit_control(make_group_setup(control_, spec.name, spec.world_ranks, env_.rank,
                                         spec.incarnation, engine_.tag_ub(), result),
                        spec.timeout_seconds)
        .get();
    auto g = std::make_shared<MpiGroup>();
    g->name = spec.name;
    g->world_ranks = spec.world_ranks;
    g->rank = spec.my_group_rank;
    g->timeout_seconds = spec.timeout_seconds;
    g->comm = result->comm;
    return std::make_unique<MpiBackend>(engine_, std::move(g), mode_);
  }

  void shutdown() override {
    // Every Backend is gone (their communicators are queued for freeing); MPI
    // itself stays initialised until the process exits (see engine.h).
    if (control_ != MPI_COMM_NULL) engine_.free_comm(control_);
    control_ = MPI_COMM_NULL;
    engine_.sync();
  }

 private:
  LaunchEnv env_;
  MpiEngine& engine_;
  ReductionMode mode_;
  MPI_Comm control_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(const LaunchEnv& env) {
  ReductionMode mode = reduction_mode_from_env();
  MpiEngine& engine = MpiEngine::get();
  if (engine.world_rank() != env.rank || engine.world_size() != env.world_size) {
    throw RuntimeError("init: MPI_COMM_WORLD has this process as rank " +
                       std::to_string(engine.world_rank()) + " of " +
                       std::to_string(engine.world_size()) + ", but the launch environment (" +
                       env.source + ") says rank " + std::to_string(env.rank) + " of " +
                       std::to_string(env.world_size) +
                       ". Start every rank with one mpirun/srun --mpi=pmix command, and do not "
                       "set COLLIE_RANK/RANK variables that disagree with it");
  }
  return std::make_unique<MpiTransport>(env, engine, mode);
}

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  // One of the few MPI calls allowed before MPI_Init.
  if (MPI_Get_library_version(version, &len) != MPI_SUCCESS) return "MPI";
  std::string s(version, static_cast<size_t>(len));
  return s.substr(0, s.find_first_of(",\n"));
}

}  // namespace collie::detail
