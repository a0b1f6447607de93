#include "rank_runner.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <thread>
#include <typeinfo>

#include "check.h"
#include "collie/runtime.h"

namespace collie::testing {
namespace {

constexpr size_t kMessageSlotBytes = 4096;

std::string& last_job_id_storage() {
  static std::string id;
  return id;
}

std::string next_job_id() {
  static int counter = 0;
  return "gt" + std::to_string(static_cast<long>(getpid())) + "_" + std::to_string(counter++);
}

std::string format_seconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w <= 0) return;
    p += w;
    left -= static_cast<size_t>(w);
  }
}

// Reports a failure from inside a child: to stderr and into the rank's message slot.
void report_failure(int rank, const std::string& what, char* slot) {
  std::string line = "rank " + std::to_string(rank) + ": " + what + "\n";
  write_all(2, line);
  std::snprintf(slot, kMessageSlotBytes, "%s", what.c_str());
}

[[noreturn]] void child_main(int rank, int n, const std::string& job_id, const RunOptions& opts,
                             const std::function<void(int)>& body, char* slot) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed gtest process
  ::setenv("COLLIE_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("COLLIE_WORLD_SIZE", std::to_string(n).c_str(), 1);
  ::setenv("COLLIE_LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("COLLIE_LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
  ::setenv("COLLIE_JOB_ID", job_id.c_str(), 1);
  ::setenv("COLLIE_TIMEOUT", format_seconds(opts.collie_timeout_seconds).c_str(), 1);
  for (const auto& [name, value] : opts.env) ::setenv(name.c_str(), value.c_str(), 1);

  int code = 0;
  try {
    if (opts.call_init) collie::init();
    body(rank);
    if (opts.call_init) collie::release();
  } catch (const std::exception& e) {
    report_failure(rank, type_name_of(e) + ": " + e.what(), slot);
    code = 1;
  } catch (...) {
    report_failure(rank, "an exception that is not a std::exception", slot);
    code = 1;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace

bool RankStatus::exited() const { return !killed_at_deadline && WIFEXITED(wait_status); }
int RankStatus::exit_code() const { return exited() ? WEXITSTATUS(wait_status) : -1; }
bool RankStatus::signaled() const { return killed_at_deadline || WIFSIGNALED(wait_status); }
int RankStatus::term_signal() const {
  return WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
}

std::string RankStatus::describe() const {
  std::string out;
  if (killed_at_deadline) {
    out = "still running at the harness deadline, killed";
  } else if (WIFEXITED(wait_status)) {
    out = "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  } else if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    out = "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  } else {
    out = "ended with wait status " + std::to_string(wait_status);
  }
  if (!message.empty()) out += ": " + message;
  return out;
}

SharedMemory::SharedMemory(size_t bytes) : bytes_(bytes) {
  data_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw std::runtime_error("SharedMemory: mmap of " + std::to_string(bytes) + " bytes failed: " +
                             std::strerror(errno));
  }
}

SharedMemory::~SharedMemory() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
}

std::vector<std::string> leftover_shm_entries(const std::string& job_id) {
  std::vector<std::string> out;
  const std::string prefix = "collie-" + std::to_string(static_cast<unsigned long>(getuid())) +
                             "-" + job_id + "-";
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return out;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    // "collie-<uid>-<job>-<anything>" or exactly "collie-<uid>-<job>".
    if (name.compare(0, prefix.size(), prefix) == 0 || name == prefix.substr(0, prefix.size() - 1)) {
      out.push_back(name);
    }
  }
  ::closedir(dir);
  return out;
}

const std::string& last_job_id() { return last_job_id_storage(); }

std::vector<RankStatus> run_ranks_collect(int n, const std::function<void(int)>& body,
                                          const RunOptions& opts) {
  std::vector<RankStatus> statuses(static_cast<size_t>(n));
  const std::string job_id = next_job_id();
  last_job_id_storage() = job_id;
  SharedMemory messages(kMessageSlotBytes * static_cast<size_t>(n > 0 ? n : 1));
  char* slots = messages.as<char>();

  // Nothing buffered may be duplicated into the children.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    statuses[static_cast<size_t>(r)].rank = r;
    pid_t pid = ::fork();
    if (pid == 0) child_main(r, n, job_id, opts, body, slots + kMessageSlotBytes * r);
    if (pid < 0) {
      ADD_FAILURE() << "fork() failed for rank " << r << ": " << std::strerror(errno);
      for (int k = 0; k < r; ++k) ::kill(pids[static_cast<size_t>(k)], SIGKILL);
      for (int k = 0; k < r; ++k) ::waitpid(pids[static_cast<size_t>(k)], nullptr, 0);
      return statuses;
    }
    pids[static_cast<size_t>(r)] = pid;
  }

  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opts.deadline_seconds));
  int running = n;
  std::vector<bool> done(static_cast<size_t>(n), false);
  while (running > 0) {
    bool progressed = false;
    for (int r = 0; r < n; ++r) {
      if (done[static_cast<size_t>(r)]) continue;
      int st = 0;
      pid_t got = ::waitpid(pids[static_cast<size_t>(r)], &st, WNOHANG);
      if (got == pids[static_cast<size_t>(r)]) {
        statuses[static_cast<size_t>(r)].wait_status = st;
        done[static_cast<size_t>(r)] = true;
        --running;
        progressed = true;
      }
    }
    if (running == 0) break;
    if (Clock::now() > deadline) {
      for (int r = 0; r < n; ++r) {
        if (done[static_cast<size_t>(r)]) continue;
        ::kill(pids[static_cast<size_t>(r)], SIGKILL);
        int st = 0;
        ::waitpid(pids[static_cast<size_t>(r)], &st, 0);
        statuses[static_cast<size_t>(r)].wait_status = st;
        statuses[static_cast<size_t>(r)].killed_at_deadline = true;
        done[static_cast<size_t>(r)] = true;
      }
      running = 0;
      break;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  for (int r = 0; r < n; ++r) {
    const char* slot = slots + kMessageSlotBytes * r;
    statuses[static_cast<size_t>(r)].message.assign(slot, strnlen(slot, kMessageSlotBytes));
  }

  // The engine's contract: every segment is unlinked once mapped, so nothing may remain,
  // whatever happened to the ranks.
  auto leftovers = leftover_shm_entries(job_id);
  if (!leftovers.empty()) {
    std::string list;
    for (const auto& name : leftovers) {
      list += " /dev/shm/" + name;
      ::unlink(("/dev/shm/" + name).c_str());  // keep later runs clean
    }
    ADD_FAILURE() << "job " << job_id << " (" << n << " ranks) left shared memory behind:" << list;
  }
  return statuses;
}

bool run_ranks(int n, const std::function<void(int)>& body, const RunOptions& opts) {
  auto statuses = run_ranks_collect(n, body, opts);
  std::string failures;
  for (const auto& s : statuses) {
    if (!s.ok()) failures += "\n  rank " + std::to_string(s.rank) + ": " + s.describe();
  }
  if (!failures.empty()) {
    ADD_FAILURE() << "job " << last_job_id() << " with " << n << " ranks failed:" << failures;
    return false;
  }
  return true;
}

}  // namespace collie::testing
