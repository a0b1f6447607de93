// Helpers of the `collie` tool tests: temp dirs, running the built launcher with a
// clean environment, waiting with bounds, checking processes.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace collie::cli::test {

namespace fs = std::filesystem;

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

inline std::string random_hex(int digits) {
  std::random_device rd;
  std::string s;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < digits; ++i) s.push_back(hex[rd() % 16]);
  return s;
}

// A fresh directory under $TMPDIR (or /tmp), removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/collie-cli-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// The launch variables a test must not inherit from whoever runs the tests.
inline bool is_launch_variable(const std::string& name) {
  static const char* const kNames[] = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
      "MASTER_PORT", "PYTHONPATH", "PMI_RANK", "PMI_SIZE", "PMI_ID", "MPI_LOCALRANKID",
      "MPI_LOCALNRANKS", "RANK_ID", "RANK_SIZE"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return name.rfind("COLLIE_", 0) == 0 || name.rfind("OMPI_", 0) == 0 ||
         name.rfind("SLURM_", 0) == 0 || name.rfind("PMIX_", 0) == 0;
}

// Our environment without launch variables, plus `extra`.
inline std::vector<std::string> clean_env(const std::map<std::string, std::string>& extra = {}) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (is_launch_variable(name) || extra.count(name)) continue;
    env.push_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

// Parses `env` output ("NAME=value" lines) into a map (single-line values only).
inline std::map<std::string, std::string> parse_env(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A started process (the launcher) whose stdout/stderr go to files.
struct Process {
  pid_t pid = -1;
  fs::path out_path, err_path;
  Clock::time_point started;
};

struct Finished {
  bool timed_out = false;
  bool exited = false;  // normal exit (else killed by a signal)
  int code = -1;        // exit code, or signal number
  std::string out, err;
  double seconds = 0;   // from start to exit
};

// Starts `argv` (argv[0] is a path) with `env`, output into files in `dir`.
inline Process start_process(const std::vector<std::string>& argv,
                             const std::vector<std::string>& env, const fs::path& dir) {
  static int counter = 0;
  Process p;
  ++counter;
  p.out_path = dir / ("launcher" + std::to_string(counter) + ".out");
  p.err_path = dir / ("launcher" + std::to_string(counter) + ".err");
  std::vector<char*> av, ev;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  p.started = Clock::now();
  p.pid = fork();
  if (p.pid == 0) {
    setpgid(0, 0);
    int in = open("/dev/null", O_RDONLY);
    int out = open(p.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(p.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) _exit(120);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD}) signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(av[0], av.data(), ev.data());
    _exit(121);
  }
  return p;
}

// Waits up to `limit` seconds (polling; this is a test). On timeout the process
// is killed (its ranks follow: the launcher sets PR_SET_PDEATHSIG on them).
inline Finished wait_process(const Process& p, double limit) {
  Finished f;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid) break;
    if (seconds_since(p.started) > limit) {
      f.timed_out = true;
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  f.seconds = seconds_since(p.started);
  f.exited = WIFEXITED(status);
  f.code = f.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  f.out = read_file(p.out_path);
  f.err = read_file(p.err_path);
  return f;
}

// Runs the launcher binary with `args` (after "collie") and a clean environment.
inline Finished run_collie(const std::vector<std::string>& args, const TempDir& dir,
                           const std::map<std::string, std::string>& extra_env = {},
                           double limit = 60, const std::string& exe = COLLIE_CLI_PATH) {
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), args.begin(), args.end());
  return wait_process(start_process(argv, clean_env(extra_env), dir.path()), limit);
}

// Waits (polling) until every path exists and is non-empty; false after `limit` s.
inline bool wait_for_files(const std::vector<fs::path>& paths, double limit) {
  auto t0 = Clock::now();
  for (;;) {
    bool all = true;
    for (const auto& p : paths) {
      std::error_code ec;
      if (!fs::exists(p, ec) || fs::file_size(p, ec) == 0) all = false;
    }
    if (all) return true;
    if (seconds_since(t0) > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// True if `pid` is a live process (a zombie counts as gone).
inline bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return false;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return false;
  char state = stat[close_paren + 2];
  return state != 'Z' && state != 'X';
}

// Waits up to `limit` s for `pid` to be gone.
inline bool wait_gone(pid_t pid, double limit) {
  auto t0 = Clock::now();
  while (process_alive(pid)) {
    if (seconds_since(t0) > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

inline pid_t read_pid(const fs::path& p) {
  std::string s = read_file(p);
  return static_cast<pid_t>(std::atol(s.c_str()));
}

// Single-quotes `s` for /bin/sh.
inline std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

}  // namespace collie::cli::test
