// commands.h — the subcommands of the `collie` tool.
//
// main.cc dispatches `collie <name> ARGS...` through a table of Command entries;
// adding a subcommand (e.g. `collie bench`) means writing its main/usage pair in
// its own file and adding one row to the table.
#pragma once

#include <string>
#include <vector>

namespace collie::cli {

struct Command {
  const char* name;
  const char* summary;                                 // one line for `collie --help`
  int (*main)(const std::vector<std::string>& args);   // args after the subcommand name
  std::string (*usage)();                              // full help text
};

// `collie run` (main.cc: parsing in run_options.cc, the work in launcher.cc).
int run_main(const std::vector<std::string>& args);
// run_usage() is declared in run_options.h.

// `collie info` (info.cc).
int info_main(const std::vector<std::string>& args);
std::string info_usage();

// `collie bench` (bench.cc).
int bench_main(const std::vector<std::string>& args);
std::string bench_usage();

// The version string (the library's collie::version()).
const char* tool_version();

}  // namespace collie::cli
