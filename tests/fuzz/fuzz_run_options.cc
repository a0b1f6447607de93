// libFuzzer target: `collie run`'s command line (src/cli/run_options.cc). Any argv
// must parse to options that respect the documented limits, to help, or to one
// error line; never a crash or an exception.
//
// Input: NUL-separated arguments (what follows "collie run").
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli/run_options.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using collie::cli::RunParse;
  auto args = collie::fuzz::split(data, size);
  RunParse p = collie::cli::parse_run_options(args);
  if (p.kind == RunParse::Kind::kError) {
    // (The message quotes the offending argument verbatim, newlines included.)
    FUZZ_CHECK(!p.error.empty(), "an error message");
  } else if (p.kind == RunParse::Kind::kOk) {
    const auto& o = p.options;
    FUZZ_CHECK(o.nprocs >= 1 && o.nprocs <= collie::cli::kMaxRanks, "nprocs");
    FUZZ_CHECK(!o.command.empty() && !o.command[0].empty(), "program");
    FUZZ_CHECK(!o.job_id || collie::cli::valid_job_id(*o.job_id), "job id");
    if (o.timeout) {
      char* end = nullptr;
      double t = std::strtod(o.timeout->c_str(), &end);
      FUZZ_CHECK(*end == '\0' && std::isfinite(t) && t > 0, "timeout '" + *o.timeout + "'");
    }
  }
  for (const std::string& a : args) (void)collie::cli::valid_job_id(a);
  return 0;
}
