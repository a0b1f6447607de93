// run_options.h — the command line of `collie run`, parsed into RunOptions.
//
//   collie run -n N [--timeout S] [--tag-output] [--job-id ID] [--bind-to P] [--] PROGRAM ARGS...
//
// Parsing stops at the first argument that is not an option (or after "--"):
// that argument is the program and everything after it belongs to the program,
// so `collie run -n 2 python -c 'print(1)'` passes "-c" to python.
// Pure functions, no I/O: tested in tests/cli/run_options_test.cc.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cpu_binding.h"

namespace collie::cli {

// Upper bound on -n: a typo like -n 40000 must not fork-bomb the machine.
inline constexpr int kMaxRanks = 1024;
// The library keeps at most 48 characters of a job id (shared-memory names have a
// length limit); a longer --job-id would make the launcher sweep the wrong names.
inline constexpr std::size_t kMaxJobIdLength = 48;

struct RunOptions {
  int nprocs = 0;                       // -n N
  std::optional<std::string> timeout;   // --timeout S, as given (validated: a number > 0)
  bool tag_output = false;              // --tag-output
  std::optional<std::string> job_id;    // --job-id ID (validated with valid_job_id)
  BindPolicy bind = BindPolicy::kAuto;  // --bind-to auto|core|none
  std::vector<std::string> command;     // PROGRAM ARGS...
};

struct RunParse {
  enum class Kind { kOk, kHelp, kError };
  Kind kind = Kind::kError;
  RunOptions options;   // meaningful when kind == kOk
  std::string error;    // meaningful when kind == kError: one line, no "collie run:" prefix
};

// Parses the arguments that follow "run".
RunParse parse_run_options(const std::vector<std::string>& args);

// The usage text of `collie run` (several lines, ends with a newline).
std::string run_usage();

// A job id is 1..kMaxJobIdLength characters of [A-Za-z0-9]. No '-' (it separates the
// fields of shared-memory names) and no '_' (keeps ids from foreign launchers,
// which the library maps to '_', apart from ours).
bool valid_job_id(std::string_view id);

// A fresh job id: "<pid in hex>x<8 random hex digits>", e.g. "1f3ax9c04be12".
std::string generate_job_id();

}  // namespace collie::cli
