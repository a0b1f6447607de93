// FaultJob: one `collie run -n N --timeout T -- fault_rank SCENARIO` launch for
// fault_test.cc, with the helpers to inject signals into its ranks and to read
// what every rank reported (fault_protocol.h).
//
// Example:
//   FaultJob job("kill_all_reduce", 3, 2.0);
//   ASSERT_TRUE(job.wait_ready({0, 1, 2}));
//   int64_t t0 = job.signal(1, SIGKILL);
//   auto f = job.finish();
//   auto r = job.result(0);            // r.cls == "CommError", r.end - t0 < ...
#pragma once

#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fault_protocol.h"
#include "test_util.h"  // tests/cli: TempDir, start_process, wait_process, ...

namespace collie::faults {

namespace test = collie::cli::test;

class FaultJob {
 public:
  // `env`: extra environment for every rank (e.g. a smaller p2p ring).
  FaultJob(const std::string& scenario, int nranks, double timeout_seconds,
           const std::map<std::string, std::string>& env = {});
  ~FaultJob();  // SIGCONTs stopped ranks; kills the launcher if still running
  FaultJob(const FaultJob&) = delete;
  FaultJob& operator=(const FaultJob&) = delete;

  const std::string& dir() const { return dir_str_; }
  const std::string& job_id() const { return job_; }
  double timeout() const { return timeout_; }

  // Waits until every listed rank wrote ready.<r>; false after `limit` s.
  bool wait_ready(const std::vector<int>& ranks, double limit = 60) const;
  // Waits until `path` exists; false after `limit` s.
  bool wait_for(const std::string& path, double limit = 60) const;
  pid_t pid(int rank) const;
  // Sends `sig` to rank `rank` (its pid, not its group); returns the steady-clock ns
  // just before sending. SIGSTOPped ranks are SIGCONTed by the destructor.
  int64_t signal(int rank, int sig);
  // Creates the "go" file that waiting ranks poll.
  void go() const;
  // Waits for the launcher to exit (killed after `limit` s).
  test::Finished finish(double limit = 90);
  // Steady-clock ns when finish() saw the launcher gone (0 before).
  int64_t ended_ns() const { return ended_ns_; }
  Result result(int rank) const;
  // /dev/shm entries of this job (collie-<uid>-<job>[-...] and sem. variants).
  std::vector<std::string> leftovers() const;

 private:
  test::TempDir dir_;
  std::string dir_str_;
  std::string job_;
  double timeout_;
  test::Process launcher_;
  bool finished_ = false;
  int64_t ended_ns_ = 0;
  std::set<pid_t> stopped_;
};

// Seconds a signalled rank's error may take beyond the deadline + 1 s bound, for a
// loaded 2-core machine (COLLIE_FAULT_SLACK_S overrides; default 1).
double slack_seconds();

// The single "collie run: rank R ..." verdict line of the launcher's stderr:
// R, or -1 when there is none or more than one. *line gets the line.
int verdict_rank(const std::string& launcher_err, std::string* line);

}  // namespace collie::faults
