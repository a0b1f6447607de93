#include "fault_job.h"

#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <thread>

namespace collie::faults {

FaultJob::FaultJob(const std::string& scenario, int nranks, double timeout_seconds,
                   const std::map<std::string, std::string>& env)
    : dir_str_(dir_.str()),
      job_("flt" + std::to_string(getpid()) + "x" + test::random_hex(8)),
      timeout_(timeout_seconds) {
  char t[32];
  std::snprintf(t, sizeof t, "%g", timeout_seconds);
  std::vector<std::string> argv = {COLLIE_CLI_PATH, "run", "-n", std::to_string(nranks),
                                   "--timeout", t, "--job-id", job_, "--", FAULT_RANK_PATH,
                                   scenario};
  // Flight-recorder dumps go next to the results, where the tests look for them.
  auto all = env;
  all["COLLIE_FAULT_DIR"] = dir_str_;
  all["COLLIE_TRACE_DIR"] = dir_str_;
  launcher_ = test::start_process(argv, test::clean_env(all), dir_.path());
}

FaultJob::~FaultJob() {
  for (pid_t p : stopped_) kill(p, SIGCONT);  // never leave a stopped process behind
  if (!finished_) finish(30);
}

bool FaultJob::wait_for(const std::string& path, double limit) const {
  auto t0 = test::Clock::now();
  while (access(path.c_str(), F_OK) != 0) {
    if (test::seconds_since(t0) > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool FaultJob::wait_ready(const std::vector<int>& ranks, double limit) const {
  auto t0 = test::Clock::now();
  for (int r : ranks) {
    double left = limit - test::seconds_since(t0);
    if (!wait_for(rank_file(dir_str_, "ready", r), left > 0 ? left : 0)) return false;
  }
  return true;
}

pid_t FaultJob::pid(int rank) const {
  if (!wait_for(rank_file(dir_str_, "pid", rank), 30)) return -1;
  return test::read_pid(rank_file(dir_str_, "pid", rank));
}

int64_t FaultJob::signal(int rank, int sig) {
  pid_t p = pid(rank);
  if (p <= 0) return 0;
  if (sig == SIGSTOP) stopped_.insert(p);
  int64_t t = now_ns();
  kill(p, sig);
  return t;
}

void FaultJob::go() const { write_file_atomically(dir_str_ + "/go", "go\n"); }

test::Finished FaultJob::finish(double limit) {
  finished_ = true;
  test::Finished f = test::wait_process(launcher_, limit);
  ended_ns_ = now_ns();
  for (pid_t p : stopped_) kill(p, SIGCONT);
  return f;
}

Result FaultJob::result(int rank) const {
  return parse_result(test::read_file(rank_file(dir_str_, "result", rank)));
}

std::vector<std::string> FaultJob::leftovers() const {
  std::vector<std::string> out;
  const std::string prefix = "collie-" + std::to_string(getuid()) + "-" + job_;
  std::error_code ec;
  for (const auto& e : test::fs::directory_iterator("/dev/shm", ec)) {
    std::string name = e.path().filename().string();
    std::string bare = name.rfind("sem.", 0) == 0 ? name.substr(4) : name;
    if (bare == prefix || bare.rfind(prefix + "-", 0) == 0) out.push_back(name);
  }
  return out;
}

double slack_seconds() {
  const char* v = std::getenv("COLLIE_FAULT_SLACK_S");
  return v != nullptr && *v != '\0' ? std::atof(v) : 1.0;
}

int verdict_rank(const std::string& launcher_err, std::string* line) {
  static const std::regex re("collie run: rank ([0-9]+) (exited with code [0-9]+|was killed by signal [A-Z0-9]+)");
  int found = -1, count = 0;
  for (auto it = std::sregex_iterator(launcher_err.begin(), launcher_err.end(), re);
       it != std::sregex_iterator(); ++it) {
    ++count;
    found = std::stoi((*it)[1].str());
    if (line != nullptr) *line = it->str();
  }
  return count == 1 ? found : -1;
}

}  // namespace collie::faults
