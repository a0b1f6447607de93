#include "cli/run_options.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <sstream>

namespace collie::cli {
namespace {

RunParse error(std::string message) {
  RunParse r;
  r.kind = RunParse::Kind::kError;
  r.error = std::move(message);
  return r;
}

// Parses -n's value. Returns an error message, or "" on success.
std::string parse_nprocs(const std::string& text, int* out) {
  if (text.empty()) return "-n needs a number of ranks";
  auto digits = [](std::string_view t) {
    if (t.empty()) return false;
    for (char c : t) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  if (text[0] == '-' && digits(std::string_view(text).substr(1))) {
    return "-n must be at least 1, got " + text;
  }
  if (!digits(text)) return "-n expects a whole number of ranks, got '" + text + "'";
  if (text.size() > 6) {
    return "-n " + text + " is more than the limit of " + std::to_string(kMaxRanks) + " ranks";
  }
  int n = std::stoi(text);
  if (n < 1) return "-n must be at least 1, got " + text;
  if (n > kMaxRanks) {
    return "-n " + text + " is more than the limit of " + std::to_string(kMaxRanks) + " ranks";
  }
  *out = n;
  return "";
}

std::string check_timeout(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double t = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno == ERANGE ||
      !std::isfinite(t) || !(t > 0)) {
    return "--timeout expects a positive number of seconds, got '" + text + "'";
  }
  return "";
}

}  // namespace

bool valid_job_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxJobIdLength) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string generate_job_id() {
  std::random_device rd;
  std::uint32_t bits = rd();
  std::ostringstream s;
  s << std::hex << static_cast<unsigned long>(getpid()) << 'x';
  s.width(8);
  s.fill('0');
  s << bits;
  return s.str();
}

std::string run_usage() {
  return "usage: collie run -n N [--timeout S] [--tag-output] [--job-id ID] [--bind-to P]\n"
         "                  [--] PROGRAM [ARGS...]\n"
         "\n"
         "Starts N ranks of PROGRAM on this machine and supervises them.\n"
         "\n"
         "options:\n"
         "  -n N, --nprocs N  number of ranks to start (1.." +
         std::to_string(kMaxRanks) +
         ")\n"
         "  --timeout S       per-wait deadline of collie operations in seconds\n"
         "                    (sets COLLIE_TIMEOUT for every rank; default 300)\n"
         "  --tag-output      prefix every output line of rank r with \"[r] \"\n"
         "  --job-id ID       job id ([A-Za-z0-9], at most " +
         std::to_string(kMaxJobIdLength) +
         " characters); default: a fresh unique id\n"
         "  --bind-to P       core: pin rank r to the r-th CPU it may use; none: no\n"
         "                    pinning; auto (default): core when the ranks take more\n"
         "                    than half of the CPUs, one each (CPUs/2 < N <= CPUs)\n"
         "  -h, --help        show this help\n"
         "\n"
         "Each rank gets COLLIE_RANK, COLLIE_WORLD_SIZE, COLLIE_LOCAL_RANK,\n"
         "COLLIE_LOCAL_WORLD_SIZE, COLLIE_JOB_ID and RANK, WORLD_SIZE, LOCAL_RANK,\n"
         "LOCAL_WORLD_SIZE. When a rank fails, the others are stopped (SIGTERM, then\n"
         "SIGKILL after 3 s) and collie run exits with the first failure's code.\n"
         "See docs/launcher.md.\n";
}

RunParse parse_run_options(const std::vector<std::string>& args) {
  RunParse result;
  RunOptions& o = result.options;
  bool have_n = false;
  std::size_t i = 0;

  // Value of an option given as "--opt VALUE" or "--opt=VALUE". Returns false when missing.
  auto take_value = [&](const std::string& arg, const std::string& name, std::string* value) {
    if (arg.size() > name.size() && arg[name.size()] == '=') {
      *value = arg.substr(name.size() + 1);
      return true;
    }
    if (i + 1 >= args.size()) return false;
    *value = args[++i];
    return true;
  };
  auto is = [](const std::string& arg, const std::string& name) {
    return arg == name || (arg.size() > name.size() && arg.compare(0, name.size(), name) == 0 &&
                           arg[name.size()] == '=');
  };

  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;  // the program
    std::string value;
    if (arg == "-h" || arg == "--help") {
      result.kind = RunParse::Kind::kHelp;
      return result;
    } else if (arg == "-n" || arg == "-np" || is(arg, "--nprocs")) {
      std::string name = arg.rfind("--nprocs", 0) == 0 ? "--nprocs" : arg;
      if (!take_value(arg, name, &value)) return error(name + " needs a number of ranks");
      if (auto e = parse_nprocs(value, &o.nprocs); !e.empty()) return error(e);
      have_n = true;
    } else if (arg.size() > 2 && arg.compare(0, 2, "-n") == 0 && arg[2] != '-' && arg[2] != 'p') {
      std::string text = arg.substr(2);
      if (text[0] == '=') text.erase(0, 1);
      if (auto e = parse_nprocs(text, &o.nprocs); !e.empty()) return error(e);
      have_n = true;
    } else if (is(arg, "--timeout")) {
      if (!take_value(arg, "--timeout", &value)) return error("--timeout needs a number of seconds");
      if (auto e = check_timeout(value); !e.empty()) return error(e);
      o.timeout = value;
    } else if (is(arg, "--bind-to")) {
      if (!take_value(arg, "--bind-to", &value)) return error("--bind-to needs auto, core or none");
      if (!parse_bind_policy(value, &o.bind)) {
        return error("--bind-to expects auto, core or none, got '" + value + "'");
      }
    } else if (arg == "--tag-output") {
      o.tag_output = true;
    } else if (is(arg, "--job-id")) {
      if (!take_value(arg, "--job-id", &value)) return error("--job-id needs a value");
      if (!valid_job_id(value)) {
        return error("--job-id '" + value + "' is not valid: use 1 to " +
                     std::to_string(kMaxJobIdLength) + " characters of [A-Za-z0-9]");
      }
      o.job_id = value;
    } else {
      return error("unknown option '" + arg + "'");
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (!have_n) return error("missing -n N (the number of ranks)");
  if (o.command.empty()) return error("missing the program to run");
  if (o.command[0].empty()) return error("the program name is empty");
  result.kind = RunParse::Kind::kOk;
  return result;
}

}  // namespace collie::cli
