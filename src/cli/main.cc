// collie — the command-line tool: `collie run` (the launcher), `collie info`.
//
//   collie run -n 4 -- ./my_program args...
//   collie info
//   collie help run
//
// Subcommands live in a table (kCommands); each has its own file.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/launcher.h"
#include "cli/run_options.h"

namespace collie::cli {

int run_main(const std::vector<std::string>& args) {
  RunParse p = parse_run_options(args);
  switch (p.kind) {
    case RunParse::Kind::kHelp:
      std::fputs(run_usage().c_str(), stdout);
      return 0;
    case RunParse::Kind::kError:
      std::fprintf(stderr, "collie run: %s\n\n%s", p.error.c_str(), run_usage().c_str());
      return 2;
    case RunParse::Kind::kOk:
      break;
  }
  return launch(p.options);
}

namespace {

int help_main(const std::vector<std::string>& args);
std::string help_usage() {
  return "usage: collie help [COMMAND]\n\nShows the help of COMMAND, or the list of commands.\n";
}

const Command kCommands[] = {
    {"run", "start N ranks of a program on this machine and supervise them", run_main,
     run_usage},
    {"info", "show version, backends and the launch environment", info_main, info_usage},
    {"bench", "measure collectives over message sizes (optionally against OpenMPI)", bench_main,
     bench_usage},
    {"help", "show the help of a command", help_main, help_usage},
};

const Command* find_command(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string main_usage() {
  std::string s =
      "usage: collie COMMAND [ARGS...]\n"
      "       collie --help | --version\n"
      "\n"
      "collective communication for tensors\n"
      "\n"
      "commands:\n";
  for (const Command& c : kCommands) {
    std::string name = c.name;
    name.resize(8, ' ');
    s += "  " + name + c.summary + "\n";
  }
  s += "\nRun `collie help COMMAND` for the options of a command.\n";
  return s;
}

int help_main(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fputs(main_usage().c_str(), stdout);
    return 0;
  }
  if (args.size() == 1) {
    if (const Command* c = find_command(args[0])) {
      std::fputs(c->usage().c_str(), stdout);
      return 0;
    }
  }
  std::fprintf(stderr, "collie help: unknown command '%s'\n\n%s", args[0].c_str(),
               main_usage().c_str());
  return 2;
}

}  // namespace
}  // namespace collie::cli

int main(int argc, char** argv) {
  using namespace collie::cli;
  if (argc < 2) {
    std::fprintf(stderr, "collie: missing command\n\n%s", main_usage().c_str());
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help") {
    std::fputs(main_usage().c_str(), stdout);
    return 0;
  }
  if (cmd == "-V" || cmd == "--version") {
    std::printf("collie %s\n", tool_version());
    return 0;
  }
  const Command* c = find_command(cmd);
  if (c == nullptr) {
    std::fprintf(stderr, "collie: unknown command '%s'\n\n%s", cmd.c_str(), main_usage().c_str());
    return 2;
  }
  return c->main(std::vector<std::string>(argv + 2, argv + argc));
}
