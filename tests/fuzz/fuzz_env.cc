// libFuzzer target: the launch environment (src/runtime/env.cc). Any value of any
// variable init() reads must give a consistent LaunchEnv or a collie::ValueError,
// never another exception, a crash or undefined behaviour.
//
// Input: NUL-separated chunks; each chunk's first byte picks a variable (modulo
// the list), the rest is its value.
#include <cstdlib>

#include "collie/errors.h"
#include "fuzz_util.h"
#include "runtime/env.h"

namespace {

const char* const kVariables[] = {
    "COLLIE_RANK", "COLLIE_WORLD_SIZE", "COLLIE_LOCAL_RANK", "COLLIE_LOCAL_WORLD_SIZE",
    "COLLIE_JOB_ID", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
    "TORCHELASTIC_RUN_ID", "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_NAMESPACE", "PMI_RANK",
    "PMI_SIZE", "PMI_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID", "SLURM_STEP_ID",
    "COLLIE_TIMEOUT", "COLLIE_SHM_SLOT_BYTES", "COLLIE_P2P_RING_BYTES"};
constexpr size_t kCount = sizeof(kVariables) / sizeof(kVariables[0]);

bool job_id_ok(const std::string& id) {
  if (id.empty() || id.size() > 48) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using collie::detail::LaunchEnv;
  for (const char* v : kVariables) unsetenv(v);
  auto chunks = collie::fuzz::split(data, size, 16);
  for (const std::string& c : chunks) {
    if (c.empty()) continue;
    setenv(kVariables[static_cast<unsigned char>(c[0]) % kCount], c.c_str() + 1, 1);
  }
  try {
    LaunchEnv e = collie::detail::read_launch_env();
    FUZZ_CHECK(e.world_size >= 1 && e.rank >= 0 && e.rank < e.world_size, "rank/size");
    FUZZ_CHECK(e.local_world_size >= 1 && e.local_rank >= 0 && e.local_rank < e.local_world_size,
               "local rank/size");
    FUZZ_CHECK(job_id_ok(e.job_id), "job id '" + e.job_id + "'");
  } catch (const collie::ValueError&) {
  }
  try {
    // inf is accepted and means "no deadline": every use compares against it or
    // caps it before converting to clock ticks.
    double t = collie::detail::default_timeout_seconds();
    FUZZ_CHECK(t > 0, "timeout");
  } catch (const collie::ValueError&) {
  }
  for (const char* name : {"COLLIE_SHM_SLOT_BYTES", "COLLIE_P2P_RING_BYTES"}) {
    try {
      FUZZ_CHECK(collie::detail::env_bytes(name, 1) > 0, "env_bytes > 0");
    } catch (const collie::ValueError&) {
    }
  }
  const std::string raw = chunks.empty() ? std::string() : chunks.back();
  FUZZ_CHECK(job_id_ok(collie::detail::sanitize_job_id(raw)), "sanitize_job_id");
  return 0;
}
