// Fault injection with real processes and real signals, through the real launcher:
// `collie run -n N --timeout 2 -- fault_rank SCENARIO` (fault_rank.cc).
//
// After each fault the test checks that
//   - every surviving rank raised the right error class (CommError for a dead
//     peer or a mismatched call, TimeoutError for a live but absent peer) within
//     deadline + 1 s (+ slack for a loaded machine) of a shared start: the moment
//     the signal was sent, or the moment the rank entered the faulty operation;
//   - the message names the op and the culprit rank;
//   - the launcher exited non-zero naming the first failing rank;
//   - no /dev/shm entry of the job remains.
// Measured times are printed as "[fault-time] ..." lines (see docs/errors.md).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "cli/shm_sweep.h"
#include "fault_job.h"

namespace collie::faults {
namespace {

constexpr double kDeadline = 2.0;  // --timeout given to every job
constexpr int kWorldSize = 3;

std::string describe(const test::Finished& f) {
  return std::string(f.timed_out ? "TIMED OUT " : "") + (f.exited ? "exit " : "signal ") +
         std::to_string(f.code) + " after " + std::to_string(f.seconds) + " s\n--- stderr ---\n" +
         f.err;
}

double bound() { return kDeadline + 1.0 + slack_seconds(); }

// "rank 2", "peer 2", "rank(s) [0, 2]", "ranks [2]": the message names `rank`.
bool names_rank(const std::string& message, int rank) {
  static const std::regex re(R"((rank|peer)(s|\(s\))? (\[([0-9, ]*)\]|([0-9]+)))", std::regex::icase);
  for (auto it = std::sregex_iterator(message.begin(), message.end(), re);
       it != std::sregex_iterator(); ++it) {
    std::string list = (*it)[4].matched ? (*it)[4].str() : (*it)[5].str();
    std::istringstream in(list);
    std::string item;
    while (std::getline(in, item, ',')) {
      if (!item.empty() && std::stoi(item) == rank) return true;
    }
  }
  return false;
}

void print_time(const char* scenario, int rank, const Result& r, double seconds, const char* since) {
  std::printf("[fault-time] %-16s rank %d %-12s %.3f s after %s\n", scenario, rank, r.cls.c_str(),
              seconds, since);
}

// The launcher's verdict names `rank` (or any of `candidates` when rank < 0) and
// its exit code is `code`.
void expect_verdict(const test::Finished& f, const std::vector<int>& candidates, int code,
                    const std::string& how) {
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_TRUE(f.exited) << describe(f);
  EXPECT_EQ(f.code, code) << describe(f);
  std::string line;
  int named = verdict_rank(f.err, &line);
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), named), candidates.end())
      << "the launcher must name exactly one first failing rank among the expected ones\n"
      << describe(f);
  EXPECT_NE(line.find(how), std::string::npos) << line;
}

// The launcher's exit, relative to `t0` (the fault), for the record.
void print_launcher(const FaultJob& job, const char* scenario, int64_t t0) {
  std::printf("[fault-time] %-16s launcher exited  %.3f s after the fault\n", scenario,
              static_cast<double>(job.ended_ns() - t0) * 1e-9);
}

void expect_clean(const FaultJob& job, const test::Finished& f) {
  auto left = job.leftovers();
  std::string names;
  for (const auto& n : left) names += " /dev/shm/" + n;
  EXPECT_TRUE(left.empty()) << "job " << job.job_id() << " left:" << names << "\n" << describe(f);
}

// Survivors of a signal sent at `t0`: error class `cls` within bound() of t0 and
// a message naming `op` and the victim.
void expect_survivors(const FaultJob& job, const char* scenario, const std::vector<int>& ranks,
                      const std::string& cls, int64_t t0, const std::string& op, int victim) {
  for (int r : ranks) {
    Result res = job.result(r);
    EXPECT_EQ(res.cls, cls) << "rank " << r << ": " << res.message;
    double since = static_cast<double>(res.end - t0) * 1e-9;
    print_time(scenario, r, res, since, "the signal");
    EXPECT_LT(since, bound()) << "rank " << r << " took too long: " << res.message;
    EXPECT_NE(res.message.find(op), std::string::npos) << res.message;
    EXPECT_TRUE(names_rank(res.message, victim)) << "does not name rank " << victim << ": " << res.message;
    EXPECT_TRUE(std::regex_search(res.message, std::regex("seq [0-9]+"))) << res.message;
  }
}

// Every rank in `ranks` raised `cls`, within [lo, bound()] of entering the operation.
void expect_all_raise(const FaultJob& job, const char* scenario, const std::vector<int>& ranks,
                      const std::string& cls, double lo) {
  for (int r : ranks) {
    Result res = job.result(r);
    EXPECT_EQ(res.cls, cls) << "rank " << r << ": " << res.message;
    print_time(scenario, r, res, res.seconds(), "entering the op");
    EXPECT_LT(res.seconds(), bound()) << "rank " << r << ": " << res.message;
    EXPECT_GE(res.seconds(), lo) << "rank " << r << " raised before the deadline: " << res.message;
  }
}

bool trace_mentions(const FaultJob& job, int rank, const std::string& what) {
  std::string t = test::read_file(job.dir() + "/collie-trace-" + std::to_string(rank) +
                                  "-collie_world_group.txt");
  return t.find(what) != std::string::npos;
}

// kill_batch's exchange streams 16 MiB between every pair through 16 KiB rings,
// and its victim sends nothing until it is killed, so the signal lands mid-batch.
std::map<std::string, std::string> env_of(const std::string& scenario, int victim = -1) {
  std::map<std::string, std::string> env;
  // kill_batch streams its messages through small rings (never pulled: a pulled
  // message can be read from a stopped rank, and the victim's data must be needed
  // until the end); kill_pulled pulls even the one it sends.
  if (scenario == "kill_batch" || scenario == "kill_pulled") env["COLLIE_P2P_RING_BYTES"] = "16K";
  if (scenario == "kill_batch") env["COLLIE_P2P_PULL"] = "never";
  if (scenario == "kill_pulled") env["COLLIE_P2P_PULL"] = "always";
  // The CMA all_reduce (3 ranks on any machine: direct_ops.h); the large
  // broadcasts on a group that stages (cma_if_huge_pages.h).
  if (scenario.find("_cma_") != std::string::npos) {
    env["COLLIE_COPY_PATH"] = scenario == "kill_cma_broadcast" ? "staged" : "single";
    env["COLLIE_CMA"] = "always";
  }
  if (victim >= 0) env["COLLIE_FAULT_VICTIM"] = std::to_string(victim);
  return env;
}

// Runs `scenario` without a fault first: every rank must succeed, and the fastest
// rank's time in the big operation tells how long to wait before the signal so
// that it lands mid-transfer on this machine, however loaded: a fifth of it, but
// at most a quarter of the deadline. kill_batch's victim sends nothing before it
// is killed, so a survivor's receive from it times out (TimeoutError, not the
// CommError expected) if the signal comes a deadline after entering: on a
// machine so loaded that the exchange took 9.8 s, a fifth of it did.
//
// This run has a longer deadline than the faulted ones: it must succeed, and on a
// machine that loaded a rank can rightly wait more than 2 s for its peers
// (seen once in CI, stop_all_reduce: rank 1 timed out in the warm-up
// all_reduce waiting for ranks 0 and 2, which then took its published step,
// finished the warm-up and timed out waiting for it in the big one: they had
// reached the warm-up more than 2 s after it; kill_batch: a receive starved for
// 2 s in an exchange that took 27 s). Such a run says nothing about the fault
// under test.
constexpr double kBaselineDeadline = 20.0;

double settle_delay(const std::string& scenario) {
  FaultJob job(scenario, kWorldSize, kBaselineDeadline, env_of(scenario));
  auto f = job.finish();
  EXPECT_EQ(f.code, 0) << scenario << " without a fault\n" << describe(f);
  double fastest = 1e9;
  for (int r = 0; r < kWorldSize; ++r) {
    Result res = job.result(r);
    EXPECT_EQ(res.cls, "ok") << scenario << " rank " << r << ": " << res.message;
    print_time(scenario.c_str(), r, res, res.seconds(), "entering (run without fault)");
    fastest = std::min(fastest, res.seconds());
  }
  expect_clean(job, f);
  return std::clamp(fastest / 5, 0.005, kDeadline / 4);
}

void sleep_seconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// A job of `scenario` in which rank 1 got `sig` while ranks 0 and 2 were provably
// inside the big operation: rank 1 is first frozen with SIGSTOP, and `sig` follows
// only if neither survivor has finished by then. Otherwise the fault came too late
// on this run (rank 1 had already given them everything): the job is dropped and
// retried with half the delay, at most 6 times. t0: when `sig` was sent.
struct Faulted {
  std::unique_ptr<FaultJob> job;
  test::Finished f;
  int64_t t0 = 0;
};

Faulted fault_mid_operation(const std::string& scenario, int sig) {
  double delay = settle_delay(scenario);
  Faulted out;
  for (int attempt = 0; attempt < 6; ++attempt, delay /= 2) {
    out.job = std::make_unique<FaultJob>(scenario, kWorldSize, kDeadline, env_of(scenario, 1));
    if (!out.job->wait_ready({0, 1, 2})) break;
    sleep_seconds(delay);
    int64_t stopped = out.job->signal(1, SIGSTOP);
    sleep_seconds(0.02);  // lets a survivor that was about to finish do so
    bool mid = true;
    for (int r : {0, 2}) mid = mid && access(rank_file(out.job->dir(), "result", r).c_str(), F_OK) != 0;
    if (mid) {
      out.t0 = sig == SIGSTOP ? stopped : out.job->signal(1, sig);
      out.f = out.job->finish();
      return out;
    }
    std::printf("[fault-time] %s: a survivor finished before rank 1 was stopped %.3f s in; retrying\n",
                scenario.c_str(), delay);
    out.job->signal(1, SIGKILL);
    out.job->finish();
  }
  ADD_FAILURE() << scenario << ": could not land the fault inside the operation";
  return out;
}

// `scenario` with rank 1 SIGKILLed inside the operation: the launcher names it,
// and ranks 0 and 2 raise CommError naming it, with `what` in the message.
// False if the fault could not be landed (already reported).
bool killed_mid_operation(const std::string& scenario, const std::string& what, Faulted* x) {
  *x = fault_mid_operation(scenario, SIGKILL);
  if (x->t0 == 0) return false;
  expect_verdict(x->f, {1}, 128 + SIGKILL, "rank 1 was killed by signal SIGKILL");
  expect_survivors(*x->job, scenario.c_str(), {0, 2}, "CommError", x->t0, what, 1);
  print_launcher(*x->job, scenario.c_str(), x->t0);
  return true;
}

TEST(FaultInjection, SigkillMidAllReduce) {
  Faulted x;
  ASSERT_TRUE(killed_mid_operation("kill_all_reduce", "all_reduce", &x));
  // The flight recorder dumped the failed operation into COLLIE_TRACE_DIR.
  for (int r : {0, 2}) EXPECT_TRUE(trace_mentions(*x.job, r, "FAILED")) << "rank " << r;
  expect_clean(*x.job, x.f);
}

// The same inside all_reduces that read and write the peers' tensors with
// process_vm_readv/writev: the dead peer's memory is gone, so a survivor fails
// either on a read or write (the kernel's ESRCH) or on the wait that follows.
TEST(FaultInjection, SigkillMidCmaAllReduce) {
  Faulted x;
  ASSERT_TRUE(killed_mid_operation("kill_cma_all_reduce", "all_reduce", &x));
  expect_clean(*x.job, x.f);
}

// The same inside broadcasts of 9 MiB from the killed rank on a group that
// stages: each starts with the root telling the others whether its input lies
// on huge pages, then they read it with process_vm_readv (or through the slots,
// where it does not). A survivor fails waiting for that answer, reading the
// dead root's memory, or waiting for its data.
TEST(FaultInjection, SigkillMidLargeBroadcastFromTheKilledRoot) {
  Faulted x;
  ASSERT_TRUE(killed_mid_operation("kill_cma_broadcast", "broadcast", &x));
  expect_clean(*x.job, x.f);
}

// A stopped peer of a CMA all_reduce is alive: its memory stays readable, so the
// survivors finish their part and then time out waiting for it (their Works keep
// their tensors, which the stopped rank could still write into: work.h).
TEST(FaultInjection, SigstopMidCmaAllReduceGivesTimeout) {
  Faulted x = fault_mid_operation("stop_cma_all_reduce", SIGSTOP);
  ASSERT_TRUE(x.t0 != 0);
  expect_verdict(x.f, {0, 2}, 3, "exited with code 3");
  expect_survivors(*x.job, "stop_cma_all_reduce", {0, 2}, "TimeoutError", x.t0, "all_reduce", 1);
  print_launcher(*x.job, "stop_cma_all_reduce", x.t0);
  expect_clean(*x.job, x.f);
}

// Ranks 0 and 2 are inside a batch_isend_irecv of 64 MiB with each other and
// with rank 1, which is killed (it never started its own batch: fault_rank.cc's
// big_exchange, so the survivors surely still need it). Both raise CommError for
// a transfer with rank 1 while their exchange with each other goes on.
TEST(FaultInjection, SigkillMidBatchIsendIrecv) {
  Faulted x;
  // The batch is one call (its four ops name one group); its first failing
  // transfer is reported, by direction, peer and tag: one with rank 1.
  ASSERT_TRUE(killed_mid_operation("kill_batch", "batch_isend_irecv of 4 transfers", &x));
  for (int r : {0, 2}) {
    const std::string message = x.job->result(r).message;
    EXPECT_TRUE(
        std::regex_search(message, std::regex(R"(\(its (isend to|irecv from) rank 1 tag \d+\))")))
        << "rank " << r << ": " << message;
  }
  expect_clean(*x.job, x.f);
}

// A pulled message (docs/algorithms.md) whose receiver is killed before reading
// it: the sender's send fails with CommError naming the dead rank, quickly.
TEST(FaultInjection, SigkillBeforeAPulledMessageIsRead) {
  FaultJob job("kill_pulled", kWorldSize, kDeadline, env_of("kill_pulled", 1));
  ASSERT_TRUE(job.wait_ready({0, 1, 2}));
  job.signal(1, SIGSTOP);
  job.go();
  sleep_seconds(0.05);  // rank 0 publishes the message; rank 1, stopped, cannot read it
  const int64_t t0 = job.signal(1, SIGKILL);
  auto f = job.finish();
  expect_verdict(f, {1}, 128 + SIGKILL, "rank 1 was killed by signal SIGKILL");
  expect_survivors(job, "kill_pulled", {0}, "CommError", t0, "died before reading the message", 1);
  EXPECT_EQ(job.result(2).cls, "ok") << job.result(2).message;
  expect_clean(job, f);
}

// Rank 1 is killed inside init() (its world segment exists, the rendezvous is not
// complete); rank 2 joins afterwards. The dead rank's segment is never unlinked by
// its owner: the launcher's end-of-job sweep removes it.
TEST(FaultInjection, SigkillDuringInit) {
  FaultJob job("kill_init", kWorldSize, kDeadline, env_of("kill_init", 1));
  ASSERT_TRUE(job.wait_ready({0, 1}));
  // Rank 2 writes its pid file right after blocking SIGTERM. Until then the
  // launcher's SIGTERM (sent when rank 1 dies) would kill it with no result: on a
  // loaded machine a sanitized rank can still be starting up when rank 1 is killed.
  ASSERT_GT(job.pid(2), 0) << "rank 2 never started";
  // Wait until rank 1's world segment is fully initialised (header magic stored):
  // a rank killed before that has no pid its peers could check, so they could only
  // time out (see docs/errors.md).
  const std::regex seg("collie-" + std::to_string(getuid()) + "-" + job.job_id() + "-[0-9a-f]+-1");
  bool created = false;
  for (int i = 0; i < 3000 && !created; ++i) {
    std::error_code ec;
    int dfd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (const auto& e : test::fs::directory_iterator("/dev/shm", ec)) {
      std::string name = e.path().filename().string();
      if (std::regex_match(name, seg) &&
          cli::check_stale_segment(dfd, name.c_str(), getuid()) == cli::StaleCheck::kOwnerAlive) {
        created = true;
      }
    }
    close(dfd);
    if (!created) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(created) << "rank 1 never created its world segment";
  int64_t t0 = job.signal(1, SIGKILL);
  job.go();
  auto f = job.finish();
  expect_verdict(f, {1}, 128 + SIGKILL, "rank 1 was killed by signal SIGKILL");
  for (int r : {0, 2}) {
    Result res = job.result(r);
    EXPECT_EQ(res.cls, "CommError") << "rank " << r << ": " << res.message << "\n" << describe(f);
    double since = static_cast<double>(res.end - t0) * 1e-9;
    print_time("kill_init", r, res, since, "the signal");
    EXPECT_LT(since, bound()) << res.message;
    EXPECT_TRUE(names_rank(res.message, 1)) << res.message;
    EXPECT_NE(res.message.find("died"), std::string::npos) << res.message;
  }
  print_launcher(job, "kill_init", t0);
  EXPECT_NE(f.err.find("leftover shared-memory object(s) of job " + job.job_id()), std::string::npos)
      << describe(f);
  expect_clean(job, f);
}

// A stopped rank is alive: its peers must time out, not declare it dead.
TEST(FaultInjection, SigstopMidAllReduceGivesTimeoutNotCommError) {
  Faulted x = fault_mid_operation("stop_all_reduce", SIGSTOP);
  ASSERT_TRUE(x.t0 != 0);
  const FaultJob& job = *x.job;
  const test::Finished& f = x.f;
  const int64_t t0 = x.t0;
  expect_verdict(f, {0, 2}, 3, "exited with code 3");
  expect_survivors(job, "stop_all_reduce", {0, 2}, "TimeoutError", t0, "all_reduce", 1);
  print_launcher(job, "stop_all_reduce", t0);
  for (int r : {0, 2}) {
    Result res = job.result(r);
    EXPECT_GE(static_cast<double>(res.end - t0) * 1e-9, kDeadline - 0.5)
        << "timed out before the deadline: " << res.message;
  }
  expect_clean(job, f);
}

// Ranks paused (SIGSTOP) at random, each time for well under the deadline, while
// all of them run rounds of small collectives, ring exchanges, larger calls and
// short-lived groups (fault_rank.cc, pause_storm): no call may time out, fail or
// return a wrong value, and every
// rank must finish after the same round. A paused rank is one the scheduler did
// not run for a while, which a loaded machine does all the time: a step published
// while a peer slept, a doorbell rung while it was stopped, a wait that began
// before the pause must all come out right.
void run_pause_storm(const std::map<std::string, std::string>& env) {
  // The deadline is 5 s (not kDeadline): pauses of up to 150 ms on a loaded
  // machine must not add up to one, and a step that was missed still shows, as a
  // TimeoutError.
  FaultJob job("pause_storm", kWorldSize, 5.0, env);
  ASSERT_TRUE(job.wait_ready({0, 1, 2}));
  std::mt19937 random(20261202);
  int pauses = 0;
  auto all_reported = [&] {
    for (int r = 0; r < kWorldSize; ++r) {
      if (access(rank_file(job.dir(), "result", r).c_str(), F_OK) != 0) return false;
    }
    return true;
  };
  for (auto t0 = test::Clock::now(); !all_reported() && test::seconds_since(t0) < 60; ++pauses) {
    const int victim = static_cast<int>(random() % kWorldSize);
    job.signal(victim, SIGSTOP);
    sleep_seconds(0.01 + 0.14 * static_cast<double>(random() % 1000) / 1000);
    job.signal(victim, SIGCONT);
    sleep_seconds(0.04 * static_cast<double>(random() % 1000) / 1000);
  }
  auto f = job.finish();
  EXPECT_EQ(f.code, 0) << describe(f);
  std::printf("[fault-time] pause_storm      %d pauses\n", pauses);
  EXPECT_GE(pauses, 5) << "the rounds ended before the test could pause ranks often";
  std::string rounds0;
  for (int r = 0; r < kWorldSize; ++r) {
    Result res = job.result(r);
    EXPECT_EQ(res.cls, "ok") << "rank " << r << ": " << res.message;
    std::string rounds = test::read_file(rank_file(job.dir(), "rounds", r));
    if (r == 0) rounds0 = rounds;
    EXPECT_EQ(rounds, rounds0) << "rank " << r << " ended after another round than rank 0";
    std::printf("[fault-time] pause_storm      rank %d ok after %s", r, rounds.c_str());
  }
  expect_clean(job, f);
}

TEST(FaultInjection, RanksPausedAtRandomStillGetEveryResult) { run_pause_storm({}); }

// The same with the paths that keep a peer's memory in use across calls: every
// message pulled from the sender's memory (deferred when it arrives early, read
// after a grace) and the collectives that read and write the peers' tensors
// through CMA.
TEST(FaultInjection, RanksPausedAtRandomStillGetEveryResultPulledAndCma) {
  run_pause_storm(
      {{"COLLIE_P2P_PULL", "always"}, {"COLLIE_COPY_PATH", "single"}, {"COLLIE_CMA", "always"}});
}

// Rank 2 skips the last all_reduce and stays alive: the others time out naming it.
TEST(FaultInjection, RankSkipsTheLastCollective) {
  FaultJob job("skip_last", kWorldSize, kDeadline);
  auto f = job.finish();
  expect_verdict(f, {0, 1}, 3, "exited with code 3");
  expect_all_raise(job, "skip_last", {0, 1}, "TimeoutError", kDeadline - 0.5);
  for (int r : {0, 1}) EXPECT_TRUE(names_rank(job.result(r).message, 2)) << job.result(r).message;
  EXPECT_EQ(job.result(2).cls, "ok");
  expect_clean(job, f);
}

// Rank 2 skips a barrier: its next all_reduce meets the others' barrier, which the
// per-step fingerprints catch on every rank at once.
TEST(FaultInjection, RankSkipsABarrier) {
  FaultJob job("skip_barrier", kWorldSize, kDeadline);
  auto f = job.finish();
  expect_verdict(f, {0, 1, 2}, 3, "exited with code 3");
  expect_all_raise(job, "skip_barrier", {0, 1, 2}, "CommError", 0);
  for (int r = 0; r < kWorldSize; ++r) {
    std::string m = job.result(r).message;
    EXPECT_TRUE(m.find("barrier") != std::string::npos && m.find("all_reduce") != std::string::npos) << m;
  }
  expect_clean(job, f);
}

// Mismatched calls: CommError on every rank, the message listing each rank's call.
void mismatch(const char* scenario, const std::string& a, const std::string& b) {
  FaultJob job(scenario, kWorldSize, kDeadline);
  auto f = job.finish();
  expect_verdict(f, {0, 1, 2}, 3, "exited with code 3");
  expect_all_raise(job, scenario, {0, 1, 2}, "CommError", 0);
  for (int r = 0; r < kWorldSize; ++r) {
    std::string m = job.result(r).message;
    EXPECT_TRUE(m.find(a) != std::string::npos && m.find(b) != std::string::npos)
        << scenario << " rank " << r << ": " << m;
  }
  expect_clean(job, f);
}

TEST(FaultInjection, MismatchedDtype) { mismatch("mismatch_dtype", "float32 x", "float64 x"); }
TEST(FaultInjection, MismatchedCount) { mismatch("mismatch_count", "x1048576", "x1048575"); }
TEST(FaultInjection, MismatchedReduceOp) { mismatch("mismatch_op", "all_reduce(sum)", "all_reduce(max)"); }
TEST(FaultInjection, MismatchedRoot) { mismatch("mismatch_root", "root 0", "root 1"); }

// Rank 0 creates "g" as {0, 1}, ranks 1 and 2 as {0, 1, 2}: nobody's rendezvous
// completes; every rank gets TimeoutError from create_group after the deadline.
TEST(FaultInjection, CreateGroupWithDifferentRanks) {
  FaultJob job("group_mismatch", kWorldSize, kDeadline);
  auto f = job.finish();
  expect_verdict(f, {0, 1, 2}, 3, "exited with code 3");
  expect_all_raise(job, "group_mismatch", {0, 1, 2}, "TimeoutError", kDeadline - 0.5);
  for (int r = 0; r < kWorldSize; ++r) {
    std::string m = job.result(r).message;
    EXPECT_NE(m.find("group 'g'"), std::string::npos) << m;
  }
  expect_clean(job, f);
}

// SIGUSR1 makes a rank dump its flight recorder (into COLLIE_TRACE_DIR) while it
// waits; the job then completes normally.
TEST(FaultInjection, Sigusr1DumpsTheFlightRecorder) {
  FaultJob job("sigusr1", 2, 30);
  ASSERT_TRUE(job.wait_ready({0, 1}));
  sleep_seconds(0.1);  // rank 0 is waiting in the barrier by now (or soon: we poll)
  job.signal(0, SIGUSR1);
  bool dumped = false;
  for (int i = 0; i < 1000 && !dumped; ++i) {
    dumped = trace_mentions(job, 0, "barrier") && trace_mentions(job, 0, "still running");
    if (!dumped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  job.go();
  auto f = job.finish();
  EXPECT_TRUE(dumped) << test::read_file(job.dir() + "/collie-trace-0-collie_world_group.txt");
  EXPECT_EQ(f.code, 0) << describe(f);
  expect_clean(job, f);
}

}  // namespace
}  // namespace collie::faults
