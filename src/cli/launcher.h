// launcher.h — `collie run`: start N ranks on this machine and supervise them.
//
// Each rank is fork()ed and exec'd in its own process group (so a rank's children
// can be signalled with it), with the environment of rank_environment(). The
// launcher then waits without spinning (poll() on a signalfd and, with
// --tag-output, on the ranks' output pipes):
//   - the first rank to exit non-zero or by a signal is reported on stderr
//     ("collie run: rank R exited with code C" / "... was killed by signal SIGX"),
//     every rank's process group gets SIGTERM, and SIGKILL 3 s later;
//   - SIGINT/SIGTERM (and SIGHUP) sent to the launcher are forwarded to every
//     rank's process group, with the same grace and SIGKILL; a second one skips
//     the grace;
//   - before any rank starts, shared memory of earlier jobs whose owner process
//     is dead is removed (sweep_stale_shm in shm_sweep.h);
//   - when all ranks are gone, the job's leftover shared memory is swept
//     (shm_sweep.h) and launch() returns the exit code: 0, the first failure's code
//     (128+N for a signal), or 128+N for a signal the launcher received.
// Exited ranks are kept as zombies until the end, so a process-group id the
// launcher signals can never belong to an unrelated, newer process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/run_options.h"

namespace collie::cli {

// Seconds between SIGTERM and SIGKILL when stopping ranks.
inline constexpr double kGraceSeconds = 3.0;

// How a rank ended: an exit code, or the signal that killed it.
struct RankExit {
  bool signaled = false;
  int value = 0;  // exit code (0..255) or signal number
};

inline bool is_failure(const RankExit& e) { return e.signaled || e.value != 0; }
// 128+N for a signal, else the exit code.
inline int exit_code_of(const RankExit& e) { return e.signaled ? 128 + e.value : e.value; }

// "SIGTERM", "SIGKILL", ...; "signal 42" when the signal has no name.
std::string signal_name(int sig);

// "collie run: rank 2 exited with code 3" / "collie run: rank 0 was killed by signal SIGKILL"
std::string describe_exit(int rank, const RankExit& e);

// What one rank is told about the job.
struct RankEnvSpec {
  int rank = 0;
  int world_size = 1;
  std::string job_id;
  std::optional<std::string> timeout;      // COLLIE_TIMEOUT, when --timeout was given
  std::optional<std::string> python_dir;   // prepended to PYTHONPATH
};

// The environment of one rank: `base` ("NAME=value" entries) with the launch
// variables replaced: COLLIE_RANK, COLLIE_WORLD_SIZE, COLLIE_LOCAL_RANK,
// COLLIE_LOCAL_WORLD_SIZE, COLLIE_JOB_ID, RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, COLLIE_TIMEOUT (only replaced when spec.timeout is set) and
// PYTHONPATH (python_dir prepended, when set).
std::vector<std::string> rank_environment(const std::vector<std::string>& base,
                                          const RankEnvSpec& spec);

// "<dir of exe>/../python", canonical, if that directory exists.
std::optional<std::string> python_dir_next_to(const std::string& exe_path);

// The path of the running executable (/proc/self/exe), or "" if unknown.
std::string self_executable();

// Runs the job described by `options`; returns the launcher's exit code.
int launch(const RunOptions& options);

}  // namespace collie::cli
