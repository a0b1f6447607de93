#include "runtime/env.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collie/errors.h"
#include "core/byte_count.h"

namespace collie::detail {
namespace {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

int parse_int(const char* name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < 0 || v > 1 << 20) {
    throw ValueError(std::string("environment variable ") + name + "='" + text +
                     "' is not a non-negative integer");
  }
  return static_cast<int>(v);
}

std::optional<int> get_int(const char* name) {
  auto v = get(name);
  if (!v) return std::nullopt;
  return parse_int(name, *v);
}

// One family of variables (a launcher's naming convention).
struct Family {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
  std::vector<const char*> job_id;
  const char* label;
};

const std::vector<Family>& families() {
  static const std::vector<Family> kFamilies = {
      {"COLLIE_RANK",
       "COLLIE_WORLD_SIZE",
       "COLLIE_LOCAL_RANK",
       "COLLIE_LOCAL_WORLD_SIZE",
       {"COLLIE_JOB_ID"},
       "COLLIE_* (collie run)"},
      {"RANK",
       "WORLD_SIZE",
       "LOCAL_RANK",
       "LOCAL_WORLD_SIZE",
       {"COLLIE_JOB_ID", "TORCHELASTIC_RUN_ID", "MASTER_PORT"},
       "RANK/WORLD_SIZE (torchrun)"},
      {"OMPI_COMM_WORLD_RANK",
       "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE",
       {"COLLIE_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"},
       "OMPI_COMM_WORLD_* (Open MPI mpirun)"},
      {"PMI_RANK",
       "PMI_SIZE",
       "MPI_LOCALRANKID",
       "MPI_LOCALNRANKS",
       {"COLLIE_JOB_ID", "PMI_ID", "SLURM_JOB_ID"},
       "PMI_* (MPICH/Intel MPI)"},
      {"SLURM_PROCID",
       "SLURM_NTASKS",
       "SLURM_LOCALID",
       "SLURM_NTASKS_PER_NODE",
       {"COLLIE_JOB_ID", "SLURM_JOB_ID", "SLURM_STEP_ID"},
       "SLURM_* (srun)"},
  };
  return kFamilies;
}

}  // namespace

namespace {
std::atomic<unsigned> g_assumed_cpus{0};  // assume_cpus_for_testing; 0: the machine's
}  // namespace

void assume_cpus_for_testing(unsigned cpus) { g_assumed_cpus.store(cpus); }

bool more_ranks_than_cpus(int ranks_here) {
  const unsigned assumed = g_assumed_cpus.load();
  const unsigned cpus = assumed != 0 ? assumed : std::max(1u, std::thread::hardware_concurrency());
  return ranks_here > 0 && static_cast<unsigned>(ranks_here) > cpus;
}

std::string sanitize_job_id(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  if (out.size() > 48) out.resize(48);  // shm names have a length limit
  return out.empty() ? std::string("default") : out;
}

LaunchEnv read_launch_env() {
  LaunchEnv env;
  for (const Family& f : families()) {
    auto rank = get_int(f.rank);
    auto size = get_int(f.size);
    if (!rank || !size) continue;
    if (*size < 1) throw ValueError(std::string(f.size) + " must be at least 1, got 0");
    if (*rank >= *size) {
      throw ValueError(std::string(f.rank) + "=" + std::to_string(*rank) + " is not below " +
                       f.size + "=" + std::to_string(*size));
    }
    env.rank = *rank;
    env.world_size = *size;
    // Without local variables, assume every rank is on this host (one-machine jobs).
    env.local_rank = get_int(f.local_rank).value_or(*rank);
    env.local_world_size = get_int(f.local_size).value_or(*size);
    if (env.local_rank >= env.local_world_size) {
      throw ValueError(std::string(f.local_rank) + "=" + std::to_string(env.local_rank) +
                       " is not below the local world size " +
                       std::to_string(env.local_world_size));
    }
    std::string job;
    for (const char* name : f.job_id) {
      if (auto v = get(name)) {
        job += (job.empty() ? "" : "_") + *v;
        if (std::string(name) != "SLURM_JOB_ID") break;  // SLURM adds the step id
      }
    }
    env.job_id = sanitize_job_id(job.empty() ? "default" : job);
    env.source = f.label;
    return env;
  }
  return env;
}

double default_timeout_seconds() {
  auto v = get("COLLIE_TIMEOUT");
  if (!v) return 300.0;
  char* end = nullptr;
  double t = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || !(t > 0)) {
    throw ValueError("environment variable COLLIE_TIMEOUT='" + *v +
                     "' is not a positive number of seconds");
  }
  return t;
}

bool debug_detail() {
  auto v = get("COLLIE_DEBUG");
  if (!v || v->empty()) return false;
  std::string lower;
  for (char c : *v) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "detail") return true;
  if (lower == "off") return false;
  throw ValueError("environment variable COLLIE_DEBUG='" + *v + "' must be 'off' or 'detail'");
}

size_t env_bytes(const char* name, size_t fallback) {
  auto v = get(name);
  if (!v) return fallback;
  if (auto bytes = parse_byte_count(*v)) return *bytes;
  throw ValueError(std::string("environment variable ") + name + "='" + *v +
                   "' is not a positive byte count (e.g. 65536, 64K, 4M)");
}

std::map<std::string, std::string> relevant_environment() {
  std::map<std::string, std::string> out;
  auto add = [&](const char* name) {
    if (auto v = get(name)) out[name] = *v;
  };
  for (const Family& f : families()) {
    add(f.rank);
    add(f.size);
    add(f.local_rank);
    add(f.local_size);
    for (const char* j : f.job_id) add(j);
  }
  for (const char* n :
       {"COLLIE_TIMEOUT", "COLLIE_BACKEND", "COLLIE_SHM_SLOT_BYTES", "COLLIE_P2P_RING_BYTES",
        "COLLIE_SPIN_US", "COLLIE_MPI_REDUCTION", "COLLIE_ALLREDUCE_ALGO", "COLLIE_CMA",
        "COLLIE_SHARED_CHUNK_BYTES", "COLLIE_P2P_PULL", "COLLIE_DEBUG", "COLLIE_COPY_PATH",
        "COLLIE_HUGE_PAGES", "COLLIE_ALLOC_CACHE_BYTES", "COLLIE_REDUCE_KERNELS", "PMIX_RANK",
        "SLURM_STEP_NUM_NODES", "RANK_ID", "RANK_SIZE"}) {
    add(n);
  }
  return out;
}

}  // namespace collie::detail
