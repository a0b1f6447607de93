// The environment contract: how a process learns its place in the job.
//
// init() reads, in this order (the first family whose rank AND size are set wins):
//   1. COLLIE_RANK, COLLIE_WORLD_SIZE, COLLIE_LOCAL_RANK, COLLIE_LOCAL_WORLD_SIZE,
//      COLLIE_JOB_ID                                   (set by `collie run`)
//   2. RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (torchrun; job id from
//      TORCHELASTIC_RUN_ID or MASTER_PORT)
//   3. OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (mpirun), PMI_RANK/PMI_SIZE
//      (+ MPI_LOCALRANKID/MPI_LOCALNRANKS), SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID
//   4. none of them: a world of one.
// Tuning and safety knobs (all optional): COLLIE_TIMEOUT (seconds, default 300),
// COLLIE_BACKEND, COLLIE_SHM_SLOT_BYTES, COLLIE_P2P_RING_BYTES, COLLIE_SPIN_US,
// COLLIE_MPI_REDUCTION, COLLIE_DEBUG (docs/env.md has them all).
// docs/env.md is the user-facing copy of this contract; keep them in step.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace collie::detail {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string job_id = "single";                 // [A-Za-z0-9_] only; scopes shared-memory names
  std::string source = "none (a world of one)";  // which family of variables was used
};

// Reads the launch variables. ValueError for malformed or inconsistent values
// (non-integers, rank >= size, size < 1), naming the variable.
LaunchEnv read_launch_env();

// Default deadline of every wait, from COLLIE_TIMEOUT (seconds, > 0), else 300.
double default_timeout_seconds();

// COLLIE_DEBUG=detail (case-insensitive): every collective checks every rank's
// call before it returns. By default a small rooted call lets the ranks that need
// nobody's data return at once and check the others' calls at their next one
// (docs/design.md, "Mismatch detection"). ValueError for values other than
// off/detail, naming the variable.
bool debug_detail();

// Whether `ranks_here` processes of the job share this machine's CPUs with
// fewer CPUs than ranks (hardware_concurrency; unknown counts as one CPU).
// There a rank that polls for its peers takes the CPU a peer needs to make the
// progress it polls for, so the engines sleep instead of polling (the shm
// engine's waits, the mpi engine's driving callers).
bool more_ranks_than_cpus(int ranks_here);

// Tests only: has more_ranks_than_cpus() count `cpus` CPUs in this process and
// the ranks it forks from now on (0: the machine's again), so the rules for
// either side of it run on any machine. Every rank of a job must count alike
// (the shm groups choose their copy rules from it, each on its own).
void assume_cpus_for_testing(unsigned cpus);

// A positive byte count from variable `name`, else `fallback`. Accepts K/M/G suffixes.
size_t env_bytes(const char* name, size_t fallback);

// Job ids from foreign launchers may contain anything; keep [A-Za-z0-9_], map the rest to '_'.
std::string sanitize_job_id(const std::string& raw);

// The environment variables collie reads (init(), and the allocator's
// COLLIE_HUGE_PAGES and COLLIE_ALLOC_CACHE_BYTES), with their current values
// (unset ones omitted). For `collie info`.
std::map<std::string, std::string> relevant_environment();

}  // namespace collie::detail
