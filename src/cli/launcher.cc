#include "cli/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string_view>

#include "cli/cpu_binding.h"
#include "cli/output_tagger.h"
#include "cli/shm_sweep.h"

extern char** environ;

namespace collie::cli {

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#else
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    default: break;
  }
#endif
  return "signal " + std::to_string(sig);
}

std::string describe_exit(int rank, const RankExit& e) {
  std::string s = "collie run: rank " + std::to_string(rank);
  if (e.signaled) return s + " was killed by signal " + signal_name(e.value);
  return s + " exited with code " + std::to_string(e.value);
}

std::vector<std::string> rank_environment(const std::vector<std::string>& base,
                                          const RankEnvSpec& spec) {
  const std::string rank = std::to_string(spec.rank);
  const std::string size = std::to_string(spec.world_size);
  std::vector<std::pair<std::string, std::string>> set = {
      {"COLLIE_RANK", rank},        {"COLLIE_WORLD_SIZE", size},
      {"COLLIE_LOCAL_RANK", rank},  {"COLLIE_LOCAL_WORLD_SIZE", size},
      {"COLLIE_JOB_ID", spec.job_id},
      {"RANK", rank},               {"WORLD_SIZE", size},
      {"LOCAL_RANK", rank},         {"LOCAL_WORLD_SIZE", size},
  };
  if (spec.timeout) set.emplace_back("COLLIE_TIMEOUT", *spec.timeout);
  std::string old_pythonpath;
  bool had_pythonpath = false;

  std::set<std::string, std::less<>> replaced;
  for (const auto& [name, value] : set) replaced.insert(name);

  std::vector<std::string> env;
  env.reserve(base.size() + set.size() + 1);
  for (const std::string& entry : base) {
    std::string_view name(entry);
    name = name.substr(0, name.find('='));
    if (replaced.count(name)) continue;
    if (spec.python_dir && name == "PYTHONPATH") {
      had_pythonpath = true;
      old_pythonpath = entry.substr(std::min(entry.size(), name.size() + 1));
      continue;
    }
    env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  if (spec.python_dir) {
    std::string pp = "PYTHONPATH=" + *spec.python_dir;
    if (had_pythonpath && !old_pythonpath.empty()) pp += ":" + old_pythonpath;
    env.push_back(pp);
  }
  return env;
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::optional<std::string> python_dir_next_to(const std::string& exe_path) {
  if (exe_path.empty()) return std::nullopt;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(exe_path).parent_path() / ".." / "python";
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  auto canon = std::filesystem::canonical(dir, ec);
  if (ec) return std::nullopt;
  return canon.string();
}

namespace {

using Clock = std::chrono::steady_clock;

void print_err(const std::string& line) {
  std::string s = line + "\n";
  std::fputs(s.c_str(), stderr);
  std::fflush(stderr);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Writes all of `data` to fd, waiting (poll) if fd is non-blocking and full.
// Returns false on a permanent error (e.g. EPIPE: nobody reads our output any more).
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
    } else {
      return false;
    }
  }
  return true;
}

// One of a rank's output streams under --tag-output.
struct Stream {
  int fd = -1;       // read end of the pipe, -1 when closed
  int out_fd = -1;   // where tagged lines go (1 or 2)
  std::unique_ptr<OutputTagger> tagger;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;  // started and not yet seen exiting
  RankExit exit;
  Stream streams[2];     // stdout, stderr
};

class Supervisor {
 public:
  explicit Supervisor(const RunOptions& o) : opts_(o) {}
  int run();

 private:
  bool setup_signals();
  void restore_signals();
  bool spawn(int r, const std::vector<std::string>& env);
  [[noreturn]] void exec_child(int r, const std::vector<std::string>& env, int out_w, int err_w);
  void loop();
  void on_signal(int sig);
  // Looks at every running rank, the one with pid `first` before the others.
  void check_children(pid_t first);
  void check_rank(std::size_t r);
  void stop(int sig);
  // SIGKILL to every rank's group; `why` is printed first.
  void escalate(const std::string& why);
  // Reads what is available on `s` (up to max_reads chunks); closes it at EOF.
  void drain(Stream& s, int max_reads);
  void close_stream(Stream& s);
  void emit(int fd, const std::string& text);

  const RunOptions& opts_;
  std::string job_id_;
  std::vector<int> cpus_;  // the launcher's allowed CPUs, for --bind-to
  std::vector<Rank> ranks_;
  int running_ = 0;
  int sfd_ = -1;
  sigset_t blocked_{};
  sigset_t old_mask_{};
  struct sigaction old_pipe_ {};
  struct sigaction old_chld_ {};
  pid_t launcher_pid_ = 0;

  bool stopping_ = false;  // SIGTERM/SIGINT sent to the ranks
  bool killed_ = false;    // SIGKILL sent
  Clock::time_point deadline_{};
  bool have_result_ = false;
  int exit_code_ = 0;
  bool out_broken_[3] = {false, false, false};
};

bool Supervisor::setup_signals() {
  sigemptyset(&blocked_);
  sigaddset(&blocked_, SIGCHLD);
  sigaddset(&blocked_, SIGINT);
  sigaddset(&blocked_, SIGTERM);
  sigaddset(&blocked_, SIGHUP);  // the terminal went away: stop the job cleanly too
  if (sigprocmask(SIG_BLOCK, &blocked_, &old_mask_) != 0) {
    print_err("collie run: " + errno_text("sigprocmask"));
    return false;
  }
  sfd_ = signalfd(-1, &blocked_, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd_ < 0) {
    print_err("collie run: " + errno_text("signalfd"));
    return false;
  }
  // Writing tagged output to a closed pipe must not kill the launcher (and its
  // ranks with it); and a SIGCHLD inherited as SIG_IGN would auto-reap the ranks.
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, &old_pipe_);
  sa.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &sa, &old_chld_);
  return true;
}

void Supervisor::restore_signals() {
  if (sfd_ >= 0) ::close(sfd_);
  sfd_ = -1;
  sigaction(SIGPIPE, &old_pipe_, nullptr);
  sigaction(SIGCHLD, &old_chld_, nullptr);
  // SIGINT/SIGTERM/SIGHUP stay blocked: one that arrived after the last rank exited must
  // not kill the launcher now and replace the job's exit code. The process exits
  // right after launch() returns.
}

void Supervisor::exec_child(int r, const std::vector<std::string>& env, int out_w, int err_w) {
  // Own process group, so that kill(-pid) reaches the rank's children too.
  setpgid(0, 0);
  // If the launcher dies without cleaning up (SIGKILL), take the rank down too.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher_pid_) _exit(128 + SIGKILL);

  if (out_w >= 0) {
    dup2(out_w, STDOUT_FILENO);
    dup2(err_w, STDERR_FILENO);
  }
  // Ranks live in background process groups: reading a terminal would stop them
  // (SIGTTIN). Rank 0 inherits a non-terminal stdin (a file or pipe), like mpirun.
  if (r != 0 || isatty(STDIN_FILENO)) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      if (devnull != STDIN_FILENO) ::close(devnull);
    }
  }
  // Pinned before exec, so every thread the program starts inherits the CPU. A
  // refusal (a CPU taken away meanwhile) only costs speed: the rank runs unpinned.
  if (int cpu = cpu_for_rank(opts_.bind, r, opts_.nprocs, cpus_); cpu >= 0) bind_to_cpu(cpu);
  // Default signal state for the program.
  sigaction(SIGPIPE, &old_pipe_, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  std::vector<char*> argv;
  for (const std::string& a : opts_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  execvpe(argv[0], argv.data(), envp.data());
  const int err = errno;
  std::string msg = "collie run: cannot execute '" + opts_.command[0] + "': " +
                    std::strerror(err) + "\n";
  (void)!::write(STDERR_FILENO, msg.data(), msg.size());
  // Shell conventions: 127 = not found, 126 = found but not executable.
  _exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

bool Supervisor::spawn(int r, const std::vector<std::string>& env) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  int out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
  if (opts_.tag_output) {
    if (pipe2(out_p, O_CLOEXEC) != 0 || pipe2(err_p, O_CLOEXEC) != 0) {
      print_err("collie run: cannot start rank " + std::to_string(r) + ": " + errno_text("pipe"));
      for (int fd : {out_p[0], out_p[1], err_p[0], err_p[1]}) {
        if (fd >= 0) ::close(fd);
      }
      return false;
    }
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) {
    print_err("collie run: cannot start rank " + std::to_string(r) + ": " + errno_text("fork"));
    for (int fd : {out_p[0], out_p[1], err_p[0], err_p[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return false;
  }
  if (pid == 0) exec_child(r, env, out_p[1], err_p[1]);

  setpgid(pid, pid);  // also here: no window in which kill(-pid) misses the child
  rank.pid = pid;
  rank.running = true;
  ++running_;
  if (opts_.tag_output) {
    ::close(out_p[1]);
    ::close(err_p[1]);
    const std::string prefix = "[" + std::to_string(r) + "] ";
    int read_ends[2] = {out_p[0], err_p[0]};
    for (int k = 0; k < 2; ++k) {
      Stream& s = rank.streams[k];
      s.fd = read_ends[k];
      s.out_fd = k == 0 ? STDOUT_FILENO : STDERR_FILENO;
      s.tagger = std::make_unique<OutputTagger>(prefix);
      fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK);
    }
  }
  return true;
}

void Supervisor::emit(int fd, const std::string& text) {
  if (text.empty() || out_broken_[fd]) return;
  if (!write_all(fd, text)) out_broken_[fd] = true;  // keep draining, drop the bytes
}

void Supervisor::close_stream(Stream& s) {
  if (s.fd < 0) return;
  std::string out;
  s.tagger->finish(&out);
  emit(s.out_fd, out);
  ::close(s.fd);
  s.fd = -1;
}

void Supervisor::drain(Stream& s, int max_reads) {
  char buf[65536];
  for (int i = 0; i < max_reads && s.fd >= 0; ++i) {
    if (out_broken_[s.out_fd]) {
      // Nobody reads our stdout/stderr any more (e.g. `collie run ... | head`):
      // close the pipe, so the rank sees EPIPE/SIGPIPE as if it wrote there itself.
      ::close(s.fd);
      s.fd = -1;
      return;
    }
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      std::string out;
      s.tagger->feed(std::string_view(buf, static_cast<std::size_t>(n)), &out);
      emit(s.out_fd, out);
    } else if (n == 0) {
      close_stream(s);
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      close_stream(s);
    }
  }
}

void Supervisor::stop(int sig) {
  stopping_ = true;
  deadline_ = Clock::now() + std::chrono::milliseconds(static_cast<int>(kGraceSeconds * 1000));
  // Every rank's group, also of ranks that already exited: their children may
  // linger. Exited ranks are still unreaped zombies, so their group ids are ours.
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0) kill(-rank.pid, sig);
  }
}

void Supervisor::escalate(const std::string& why) {
  killed_ = true;
  if (!why.empty()) print_err(why);
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0) kill(-rank.pid, SIGKILL);
  }
}

void Supervisor::on_signal(int sig) {
  if (!stopping_) {
    have_result_ = true;
    exit_code_ = 128 + sig;
    print_err("collie run: received " + signal_name(sig) + "; stopping all ranks");
    stop(sig);
  } else if (!killed_) {
    // Told again while stopping: do not make the user wait for the grace period.
    escalate("collie run: received " + signal_name(sig) + " while stopping; sending SIGKILL");
  }
}

void Supervisor::check_children(pid_t first) {
  // SIGCHLD is not queued: the one that woke us names the child that died first
  // since the last look. When several ranks are found dead at once (peers noticed
  // a death and failed in turn), that one started it and is the one to report.
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    if (ranks_[r].pid == first) check_rank(r);
  }
  for (std::size_t r = 0; r < ranks_.size(); ++r) check_rank(r);
}

void Supervisor::check_rank(std::size_t r) {
  Rank& rank = ranks_[r];
  if (!rank.running) return;
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  // WNOWAIT: leave the rank a zombie (reaped at the end), which keeps its pid and
  // process-group id from being reused while we may still signal the group.
  int rc;
  do {
    rc = waitid(P_PID, static_cast<id_t>(rank.pid), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    // ECHILD: not our child any more (should not happen); treat as gone.
    rank.running = false;
    --running_;
    return;
  }
  if (info.si_pid != rank.pid) return;  // still running
  rank.running = false;
  --running_;
  rank.exit.signaled = info.si_code != CLD_EXITED;
  rank.exit.value = info.si_status;
  // Its last words first, then the verdict.
  for (Stream& s : rank.streams) drain(s, 64);
  if (is_failure(rank.exit) && !stopping_) {
    have_result_ = true;
    exit_code_ = exit_code_of(rank.exit);
    print_err(describe_exit(static_cast<int>(r), rank.exit));
    stop(SIGTERM);
  }
}

void Supervisor::loop() {
  std::vector<pollfd> fds;
  std::vector<Stream*> polled;
  while (running_ > 0) {
    int timeout_ms = -1;
    if (stopping_ && !killed_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
      if (left.count() <= 0) {
        std::string still;
        for (std::size_t r = 0; r < ranks_.size(); ++r) {
          if (ranks_[r].running) still += (still.empty() ? "" : ", ") + std::to_string(r);
        }
        char grace[32];
        std::snprintf(grace, sizeof grace, "%g", kGraceSeconds);
        escalate("collie run: rank(s) " + still + " still running " + grace +
                 " s after being told to stop; sending SIGKILL");
        continue;
      }
      timeout_ms = static_cast<int>(left.count()) + 1;
    }
    fds.clear();
    polled.clear();
    fds.push_back({sfd_, POLLIN, 0});
    for (Rank& rank : ranks_) {
      for (Stream& s : rank.streams) {
        if (s.fd >= 0) {
          fds.push_back({s.fd, POLLIN, 0});
          polled.push_back(&s);
        }
      }
    }
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      print_err("collie run: " + errno_text("poll"));
      // Cannot wait properly any more: make sure nothing survives, then block in waitpid.
      if (!have_result_) {
        have_result_ = true;
        exit_code_ = 1;
      }
      escalate("");
      break;
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) drain(*polled[i - 1], 16);
    }
    bool child_event = false;
    pid_t first_child = 0;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si[16];
      for (;;) {
        ssize_t got = ::read(sfd_, si, sizeof si);
        if (got <= 0) break;
        for (std::size_t k = 0; k < static_cast<std::size_t>(got) / sizeof si[0]; ++k) {
          int sig = static_cast<int>(si[k].ssi_signo);
          if (sig == SIGCHLD) {
            if (!child_event) first_child = static_cast<pid_t>(si[k].ssi_pid);
            child_event = true;
          } else {
            on_signal(sig);
          }
        }
      }
    }
    if (child_event) check_children(first_child);
  }
}

int Supervisor::run() {
  launcher_pid_ = getpid();
  job_id_ = opts_.job_id ? *opts_.job_id : generate_job_id();
  if (!setup_signals()) {
    restore_signals();
    return 1;
  }

  // Objects of earlier jobs whose owner died without cleanup (a launcher killed
  // with SIGKILL never ran its end-of-job sweep): free their memory now.
  auto stale = sweep_stale_shm(getuid());
  if (!stale.empty()) {
    std::string names;
    for (std::size_t i = 0; i < stale.size() && i < 3; ++i) names += (i ? ", " : "") + stale[i];
    if (stale.size() > 3) names += ", ...";
    print_err("collie run: removed " + std::to_string(stale.size()) +
              " stale shared-memory object(s) of dead processes (" + names + ")");
  }

  std::vector<std::string> base;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) base.emplace_back(*e);
  RankEnvSpec spec;
  spec.world_size = opts_.nprocs;
  spec.job_id = job_id_;
  spec.timeout = opts_.timeout;
  spec.python_dir = python_dir_next_to(self_executable());

  cpus_ = allowed_cpus();
  ranks_.resize(static_cast<std::size_t>(opts_.nprocs));
  for (int r = 0; r < opts_.nprocs; ++r) {
    spec.rank = r;
    if (!spawn(r, rank_environment(base, spec))) {
      have_result_ = true;
      exit_code_ = 1;
      stop(SIGTERM);
      break;
    }
  }

  loop();

  // Every rank has exited. Collect the output still in the pipes (children of a
  // rank may hold a pipe open, so take what is there rather than wait for EOF).
  for (Rank& rank : ranks_) {
    for (Stream& s : rank.streams) {
      drain(s, 1024);
      close_stream(s);
    }
  }
  // Processes a rank left behind in its process group do not outlive the job.
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0) kill(-rank.pid, stopping_ ? SIGKILL : SIGTERM);
  }
  for (const Rank& rank : ranks_) {
    if (rank.pid <= 0) continue;
    int status = 0;
    while (waitpid(rank.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }

  auto removed = sweep_job_shm(getuid(), job_id_);
  if (!removed.empty()) {
    print_err("collie run: removed " + std::to_string(removed.size()) +
              " leftover shared-memory object(s) of job " + job_id_);
  }
  restore_signals();
  return have_result_ ? exit_code_ : 0;
}

}  // namespace

int launch(const RunOptions& options) {
  Supervisor s(options);
  return s.run();
}

}  // namespace collie::cli
