// `collie info`: version, backends, and the launch environment init() would see.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "backends/shm/copy_path.h"
#include "backends/transport.h"
#include "cli/commands.h"
#include "cli/machine_probe.h"
#include "collie/runtime.h"
#include "core/block_cache.h"
#include "core/reduce_kernels.h"
#include "runtime/env.h"

namespace collie::cli {

const char* tool_version() { return collie::version(); }

std::string info_usage() {
  return "usage: collie info\n"
         "\n"
         "Prints the collie version, the backends compiled in, and the launch\n"
         "environment init() would use in this shell: rank, world size, local rank,\n"
         "job id, which family of variables they come from, the backend it would\n"
         "pick, and the wait timeout. Exits 1 if that environment is invalid\n"
         "(init() would fail). `collie run -n 2 collie info` shows what ranks get.\n";
}

int info_main(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(info_usage().c_str(), stdout);
      return 0;
    }
    std::fprintf(stderr, "collie info: unexpected argument '%s'\n\n%s", a.c_str(),
                 info_usage().c_str());
    return 2;
  }

  int rc = 0;
  std::printf("collie %s\n", tool_version());
  std::string list;
  for (const std::string& b : detail::available_transports()) {
    list += (list.empty() ? "" : ", ") + b;
  }
  std::printf("backends: %s\n", list.c_str());
  std::printf(
      "default backend: shm on one machine; mpi when started by mpirun or srun --mpi "
      "(docs/backends.md)\n");
  // "label: what describe() says", or the error it raised (a bad environment
  // variable), and rc 1.
  auto print_described = [&rc](const char* label, std::string (*describe)()) {
    try {
      std::printf("%s: %s\n", label, describe().c_str());
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "collie info: error: %s\n", e.what());
      rc = 1;
    }
  };
  // What makes large and 16-bit calls fast here (docs/performance.md).
  print_described("vector reductions (float16, bfloat16, float32, float64, int32, int64)",
                  detail::describe_reduce_kernels);
  std::printf("transparent huge pages: kernel mode %s; tensors of 2 MiB or more %s\n",
              huge_page_mode().c_str(),
              detail::large_blocks_ask_for_huge_pages() ? "ask for them"
                                                        : "do not ask (COLLIE_HUGE_PAGES=0)");
  // Which transfers ranks on this machine read from each other with one copy
  // (docs/algorithms.md, "Which copy path").
  print_described("copy path between ranks here", detail::describe_copy_path_preference);

  std::printf("launch environment (what init() would use):\n");
  try {
    detail::LaunchEnv env = detail::read_launch_env();
    std::printf("  source:           %s\n", env.source.c_str());
    std::printf("  rank:             %d\n", env.rank);
    std::printf("  world size:       %d\n", env.world_size);
    std::printf("  local rank:       %d\n", env.local_rank);
    std::printf("  local world size: %d\n", env.local_world_size);
    std::printf("  job id:           %s\n", env.job_id.c_str());
    try {
      detail::TransportChoice choice = detail::select_transport("", env);
      std::printf("  backend:          %s (%s)\n", choice.name.c_str(), choice.reason.c_str());
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "collie info: error: %s\n", e.what());
      rc = 1;
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "collie info: error: invalid launch environment: %s\n", e.what());
    rc = 1;
  }
  try {
    const double t = detail::default_timeout_seconds();
    const bool from_env = detail::relevant_environment().count("COLLIE_TIMEOUT") != 0;
    std::printf("  timeout:          %g s (%s)\n", t, from_env ? "COLLIE_TIMEOUT" : "default");
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "collie info: error: invalid timeout: %s\n", e.what());
    rc = 1;
  }

  std::printf("environment variables collie reads:\n");
  auto vars = detail::relevant_environment();
  if (vars.empty()) std::printf("  (none set)\n");
  for (const auto& [name, value] : vars) std::printf("  %s=%s\n", name.c_str(), value.c_str());
  std::fflush(stdout);
  return rc;
}

}  // namespace collie::cli
