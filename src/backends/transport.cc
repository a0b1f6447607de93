// Transport selection and construction (transport.h).
//
// Precedence: init()'s argument ("shm" or "mpi"), else COLLIE_BACKEND
// (shm | mpi | auto), else the launcher: a process started by mpirun or by srun
// with PMI gets mpi (when built), anything else shm. MindSpore's backend names
// (hccl, nccl, mccl) mean "the default" here. Choices that cannot work are
// ValueErrors up front instead of hangs later: shm for ranks on several hosts, mpi
// for ranks that no MPI launcher started.
#include "backends/transport.h"

#include <cstdlib>
#include <optional>

#include "backends/shm/shm_transport.h"
#include "collie/errors.h"
#if COLLIE_WITH_MPI
#include "backends/mpi/mpi_transport.h"
#endif

namespace collie::detail {
namespace {

#if COLLIE_WITH_MPI
constexpr bool kHaveMpi = true;
#else
constexpr bool kHaveMpi = false;
#endif

std::optional<std::string> env_var(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

bool is_set(const char* name) { return env_var(name).has_value(); }

// read_launch_env() prefers `collie run`'s and torchrun's variables over an MPI
// launcher's (env.h); selection follows the same precedence, so `mpirun -np 1
// collie run -n 4 prog` gives its 4 ranks shm.
bool started_by_collie_or_torchrun() {
  return (is_set("COLLIE_RANK") && is_set("COLLIE_WORLD_SIZE")) ||
         (is_set("RANK") && is_set("WORLD_SIZE"));
}

// The MPI-capable launcher that started this process, e.g. "mpirun
// (OMPI_COMM_WORLD_SIZE)", or "" for none. srun without --mpi sets only SLURM_*,
// which MPI_Init cannot wire up, so it does not count.
std::string mpi_launcher() {
  if (started_by_collie_or_torchrun()) return "";
  if (is_set("OMPI_COMM_WORLD_SIZE")) return "mpirun (OMPI_COMM_WORLD_SIZE)";
  const bool srun = is_set("SLURM_PROCID");
  if (is_set("PMIX_RANK"))
    return srun ? "srun --mpi=pmix (PMIX_RANK)" : "a PMIx launcher (PMIX_RANK)";
  if (is_set("PMI_SIZE")) return srun ? "srun --mpi=pmi2 (PMI_SIZE)" : "a PMI launcher (PMI_SIZE)";
  return "";
}

// Why the ranks are not all on this host ("" when they are, as far as the
// environment tells).
std::string ranks_elsewhere(const LaunchEnv& env) {
  if (env.local_world_size < env.world_size) {
    return "only " + std::to_string(env.local_world_size) + " of the " +
           std::to_string(env.world_size) + " ranks run on this host (" + env.source + ")";
  }
  // srun does not always say how many tasks share a node; the step's node count does.
  if (!started_by_collie_or_torchrun() && !is_set("OMPI_COMM_WORLD_SIZE") &&
      is_set("SLURM_PROCID")) {
    int nodes = std::atoi(env_var("SLURM_STEP_NUM_NODES").value_or("1").c_str());
    if (nodes > 1) {
      return "the srun step spans " + std::to_string(nodes) + " nodes (SLURM_STEP_NUM_NODES)";
    }
  }
  return "";
}

std::string built_list() {
  std::string built;
  for (const std::string& t : available_transports()) built += (built.empty() ? "" : ", ") + t;
  return built;
}

const char* kRebuildHint = "rebuild collie with -DCOLLIE_WITH_MPI=ON (needs libopenmpi-dev)";

// No backend named: decide from the launcher.
TransportChoice automatic(const LaunchEnv& env, const std::string& prefix) {
  const std::string launcher = mpi_launcher();
  const std::string elsewhere = ranks_elsewhere(env);
  if (!launcher.empty()) {
    if (kHaveMpi) return {"mpi", prefix + "launched by " + launcher};
    if (!elsewhere.empty()) {
      throw ValueError("init: launched by " + launcher + " and " + elsewhere +
                       ", but this build of collie has no mpi backend (built with: " +
                       built_list() + ") and shm only connects ranks on one host: " + kRebuildHint);
    }
    return {"shm", prefix + "launched by " + launcher +
                       ", all ranks on this host; this build has no mpi backend"};
  }
  if (!elsewhere.empty()) {
    throw ValueError("init: " + elsewhere +
                     ", but no MPI launcher started them (no OMPI_COMM_WORLD_SIZE, PMIX_RANK or "
                     "PMI_SIZE) and shm only connects ranks on one host: " +
                     (kHaveMpi ? std::string("launch with mpirun -np N or srun --mpi=pmix")
                               : std::string(kRebuildHint) + " and launch with mpirun"));
  }
  return {"shm", prefix + "default: all ranks on one machine"};
}

}  // namespace

std::vector<std::string> available_transports() {
  if (kHaveMpi) return {"shm", "mpi"};
  return {"shm"};
}

TransportChoice select_transport(const std::string& requested, const LaunchEnv& env) {
  // MindSpore's names select the default backend, which COLLIE_BACKEND may override.
  const bool mindspore_name = requested == "hccl" || requested == "nccl" || requested == "mccl";
  std::string name, reason;
  if (!requested.empty() && !mindspore_name) {
    name = requested;
    reason = "requested by init()";
  } else if (auto v = env_var("COLLIE_BACKEND")) {
    name = *v;
    reason = "COLLIE_BACKEND=" + *v;
  }
  if (name.empty() || name == "auto") {
    std::string prefix = mindspore_name ? "init('" + requested + "') takes the default; " : "";
    if (name == "auto") prefix += "COLLIE_BACKEND=auto; ";
    return automatic(env, prefix);
  }
  bool known = false;
  for (const std::string& t : available_transports()) known |= t == name;
  if (!known) {
    throw ValueError("init: backend '" + name + "' (" + reason +
                     ") is not available in this build of collie (built with: " + built_list() +
                     ")" + (name == "mpi" ? std::string("; ") + kRebuildHint : std::string()));
  }
  if (name == "shm") {
    const std::string elsewhere = ranks_elsewhere(env);
    if (!elsewhere.empty()) {
      throw ValueError("init: backend 'shm' (" + reason + ") needs every rank on one host, but " +
                       elsewhere +
                       (kHaveMpi ? "; use the mpi backend (the default under mpirun/srun)"
                                 : std::string("; ") + kRebuildHint));
    }
  }
  if (name == "mpi" && env.world_size > 1 && mpi_launcher().empty()) {
    throw ValueError("init: backend 'mpi' (" + reason +
                     ") needs ranks started by mpirun or srun "
                     "--mpi=pmix, but these " +
                     std::to_string(env.world_size) + " ranks come from " + env.source +
                     ": launch with `mpirun -np " + std::to_string(env.world_size) +
                     " PROGRAM`, or use backend 'shm'");
  }
  return {name, reason};
}

std::unique_ptr<Transport> make_transport(const TransportChoice& choice, const LaunchEnv& env) {
  if (choice.name == "shm") return make_shm_transport(env);
#if COLLIE_WITH_MPI
  if (choice.name == "mpi") return make_mpi_transport(env);
#endif
  throw ValueError("init: no transport named '" + choice.name + "'");
}

}  // namespace collie::detail
