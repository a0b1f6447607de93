// End-to-end tests of the `collie` tool: run the built binary (COLLIE_CLI_PATH) on
// small /bin/sh programs and check environments, exit codes, messages, signal
// handling, output tagging and the shared-memory sweep.
//
// Time bounds here are liveness bounds (a rank that sleeps 60 s must be stopped
// long before that), generous enough for a loaded 2-core machine; nothing checks
// performance.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "cli/cpu_binding.h"
#include "cli/run_options.h"
#include "segment_files.h"
#include "test_util.h"

namespace collie::cli {
namespace {

namespace fs = std::filesystem;
using test::Finished;
using test::sh_quote;
using test::TempDir;

constexpr double kLiveness = 15;  // seconds: "stopped quickly", with room for a loaded box
constexpr double kLimit = 60;     // seconds: a launcher that takes this long has hung

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

std::string describe(const Finished& f) {
  std::ostringstream s;
  s << (f.timed_out ? "TIMED OUT " : "") << (f.exited ? "exit " : "signal ") << f.code
    << " after " << f.seconds << " s\n--- stdout ---\n"
    << f.out << "--- stderr ---\n"
    << f.err;
  return s.str();
}

// `err` without the launcher's notice that it removed shared-memory objects of
// dead processes: other tests running at the same time (ctest -j) kill ranks on
// purpose and may leave such objects for a moment, which any launcher that
// starts then sweeps and reports.
std::string without_sweep_notices(const std::string& err) {
  std::istringstream in(err);
  std::string kept, line;
  while (std::getline(in, line)) {
    const bool notice = line.rfind("collie run: removed ", 0) == 0 &&
                        contains(line, "stale shared-memory object(s) of dead processes");
    if (!notice) kept += line + "\n";
  }
  return kept;
}

// `collie run <opts> -- /bin/sh -c SCRIPT`, run in `dir` (the script cd's there).
Finished run_sh(const TempDir& dir, std::vector<std::string> opts, const std::string& script,
                const std::map<std::string, std::string>& env = {}) {
  opts.insert(opts.begin(), "run");
  opts.insert(opts.end(), {"--", "/bin/sh", "-c", "cd " + sh_quote(dir.str()) + " || exit 99\n" + script});
  return test::run_collie(opts, dir, env, kLimit);
}

// ---------------------------------------------------------------- environment

TEST(CliEndToEnd, EveryRankSeesItsEnvironment) {
  TempDir dir;
  const int n = 3;
  Finished f = run_sh(dir, {"-n", std::to_string(n), "--timeout", "7.5"},
                      "env > env.$COLLIE_RANK.tmp && mv env.$COLLIE_RANK.tmp env.$COLLIE_RANK");
  ASSERT_FALSE(f.timed_out) << describe(f);
  ASSERT_TRUE(f.exited) << describe(f);
  EXPECT_EQ(f.code, 0) << describe(f);
  EXPECT_EQ(without_sweep_notices(f.err), "");
  std::string job;
  for (int r = 0; r < n; ++r) {
    auto env = test::parse_env(test::read_file(dir / ("env." + std::to_string(r))));
    const std::string rs = std::to_string(r), ns = std::to_string(n);
    EXPECT_EQ(env["COLLIE_RANK"], rs);
    EXPECT_EQ(env["COLLIE_WORLD_SIZE"], ns);
    EXPECT_EQ(env["COLLIE_LOCAL_RANK"], rs);
    EXPECT_EQ(env["COLLIE_LOCAL_WORLD_SIZE"], ns);
    EXPECT_EQ(env["RANK"], rs);
    EXPECT_EQ(env["WORLD_SIZE"], ns);
    EXPECT_EQ(env["LOCAL_RANK"], rs);
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], ns);
    EXPECT_EQ(env["COLLIE_TIMEOUT"], "7.5");
    EXPECT_TRUE(valid_job_id(env["COLLIE_JOB_ID"])) << env["COLLIE_JOB_ID"];
    if (r == 0) job = env["COLLIE_JOB_ID"];
    EXPECT_EQ(env["COLLIE_JOB_ID"], job) << "rank " << r << " has another job id";
    EXPECT_FALSE(env["PATH"].empty()) << "the rest of the environment is inherited";
  }
}

// The Cpus_allowed_list line of /proc/<pid>/status, e.g. "0" or "0-1".
std::string cpus_allowed(const std::string& status) {
  std::smatch m;
  std::regex line("Cpus_allowed_list:\\s*(\\S+)");
  return std::regex_search(status, m, line) ? m[1].str() : "?";
}

TEST(CliEndToEnd, RanksArePinnedToCpusAsAsked) {
  const std::vector<int> cpus = allowed_cpus();
  const std::string own = cpus_allowed(test::read_file("/proc/self/status"));
  struct Case {
    std::vector<std::string> opts;
    int n;
    bool pinned;
  };
  const bool auto_pins = cpus.size() >= 2 && cpus.size() < 4;  // 2 ranks take more than half
  for (const Case& c : {Case{{"--bind-to", "core"}, 3, true}, Case{{"--bind-to", "none"}, 2, false},
                        Case{{}, 2, auto_pins},
                        // more ranks than CPUs: round robin (cpu_binding.h)
                        Case{{}, static_cast<int>(cpus.size()) + 1, true}}) {
    TempDir dir;
    std::vector<std::string> opts = c.opts;
    opts.insert(opts.begin(), {"-n", std::to_string(c.n)});
    Finished f = run_sh(dir, opts, "cat /proc/self/status > status.$COLLIE_RANK");
    ASSERT_TRUE(f.exited && f.code == 0) << describe(f);
    for (int r = 0; r < c.n; ++r) {
      const std::string got = cpus_allowed(test::read_file(dir.path() / ("status." + std::to_string(r))));
      const std::string want =
          c.pinned ? std::to_string(cpus[static_cast<size_t>(r) % cpus.size()]) : own;
      EXPECT_EQ(got, want) << "rank " << r << " of " << c.n << " with options "
                           << (c.opts.empty() ? "(none)" : c.opts[1]);
    }
  }
}

TEST(CliEndToEnd, JobIdsDifferPerLaunchAndCanBeGiven) {
  TempDir dir;
  Finished a = run_sh(dir, {"-n", "1"}, "echo $COLLIE_JOB_ID > a");
  Finished b = run_sh(dir, {"-n", "1"}, "echo $COLLIE_JOB_ID > b");
  Finished c = run_sh(dir, {"-n", "2", "--job-id", "MyJob42"}, "echo $COLLIE_JOB_ID > c.$RANK");
  ASSERT_EQ(a.code, 0) << describe(a);
  ASSERT_EQ(b.code, 0) << describe(b);
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_NE(test::read_file(dir / "a"), test::read_file(dir / "b"));
  EXPECT_EQ(test::read_file(dir / "c.0"), "MyJob42\n");
  EXPECT_EQ(test::read_file(dir / "c.1"), "MyJob42\n");
}

TEST(CliEndToEnd, NoTimeoutVariableWithoutTheOption) {
  TempDir dir;
  Finished f = run_sh(dir, {"-n", "1"}, "echo \"[${COLLIE_TIMEOUT-unset}]\" > t");
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_EQ(test::read_file(dir / "t"), "[unset]\n");
}

TEST(CliEndToEnd, PythonPackageDirectoryIsPrependedToPythonPath) {
  TempDir dir;
  // A copy of the tool in <dir>/pkg/bin, with <dir>/pkg/python next to it.
  fs::create_directories(dir / "pkg" / "bin");
  fs::create_directories(dir / "pkg" / "python");
  fs::create_directories(dir / "bare" / "bin");
  for (const char* where : {"pkg", "bare"}) {
    fs::copy_file(COLLIE_CLI_PATH, dir / where / "bin" / "collie");
  }
  const std::vector<std::string> args = {
      "run", "-n", "1", "/bin/sh", "-c", "echo \"$PYTHONPATH\" > " + sh_quote(dir.str()) + "/pp"};

  Finished f = test::run_collie(args, dir, {{"PYTHONPATH", "/some/where"}}, kLimit,
                                (dir / "pkg" / "bin" / "collie").string());
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_EQ(test::read_file(dir / "pp"),
            fs::canonical(dir / "pkg" / "python").string() + ":/some/where\n");

  f = test::run_collie(args, dir, {{"PYTHONPATH", "/some/where"}}, kLimit,
                       (dir / "bare" / "bin" / "collie").string());
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_EQ(test::read_file(dir / "pp"), "/some/where\n");
}

TEST(CliEndToEnd, AllRanksSucceed) {
  TempDir dir;
  Finished f = run_sh(dir, {"-n", "4"}, "exit 0");
  EXPECT_FALSE(f.timed_out);
  EXPECT_TRUE(f.exited);
  EXPECT_EQ(f.code, 0) << describe(f);
  EXPECT_EQ(without_sweep_notices(f.err), "");
}

// ---------------------------------------------------------------- failures

TEST(CliEndToEnd, FirstFailingRankDecidesAndOthersAreStopped) {
  TempDir dir;
  // Ranks 0 and 2 sleep; rank 1 waits until they are up, then fails with 3.
  Finished f = run_sh(dir, {"-n", "3"},
                      "if [ $RANK = 1 ]; then\n"
                      "  while [ ! -s pid.0 ] || [ ! -s pid.2 ]; do sleep 0.05; done\n"
                      "  echo 'rank 1 fails' >&2; exit 3\n"
                      "fi\n"
                      "echo $$ > pid.$RANK; exec sleep 60\n");
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_TRUE(f.exited);
  EXPECT_EQ(f.code, 3) << describe(f);
  EXPECT_LT(f.seconds, kLiveness) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie run: rank 1 exited with code 3\n")) << describe(f);
  EXPECT_TRUE(contains(f.err, "rank 1 fails")) << describe(f);
  // Only the first failure is reported; the stopped ranks are not.
  EXPECT_FALSE(contains(f.err, "rank 0 ")) << describe(f);
  EXPECT_FALSE(contains(f.err, "rank 2 ")) << describe(f);
  for (const char* r : {"0", "2"}) {
    pid_t pid = test::read_pid(dir / (std::string("pid.") + r));
    ASSERT_GT(pid, 0);
    EXPECT_FALSE(test::process_alive(pid)) << "rank " << r << " (pid " << pid << ") survived";
  }
}

TEST(CliEndToEnd, LaterFailuresDoNotChangeTheExitCode) {
  TempDir dir;
  // Rank 1 exits 9 when told to stop; the job's code stays rank 0's 5.
  Finished f = run_sh(dir, {"-n", "2"},
                      "if [ $RANK = 0 ]; then\n"
                      "  while [ ! -s ready.1 ]; do sleep 0.05; done; exit 5\n"
                      "fi\n"
                      "trap 'exit 9' TERM; echo up > ready.1; sleep 60 & wait\n");
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 5) << describe(f);
  EXPECT_LT(f.seconds, kLiveness) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie run: rank 0 exited with code 5")) << describe(f);
  EXPECT_FALSE(contains(f.err, "code 9")) << describe(f);
}

TEST(CliEndToEnd, RankKilledBySignal) {
  TempDir dir;
  Finished f = run_sh(dir, {"-n", "2"},
                      "if [ $RANK = 1 ]; then\n"
                      "  while [ ! -s ready.0 ]; do sleep 0.05; done; kill -USR1 $$; sleep 5\n"
                      "fi\n"
                      "echo up > ready.0; exec sleep 60\n");
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 128 + SIGUSR1) << describe(f);
  EXPECT_LT(f.seconds, kLiveness) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie run: rank 1 was killed by signal SIGUSR1\n")) << describe(f);
}

TEST(CliEndToEnd, RankIgnoringSigtermIsKilledAfterTheGrace) {
  TempDir dir;
  Finished f = run_sh(dir, {"-n", "2"},
                      "if [ $RANK = 1 ]; then\n"
                      "  while [ ! -s pid.0 ]; do sleep 0.05; done; exit 7\n"
                      "fi\n"
                      "trap '' TERM; echo $$ > pid.0; exec sleep 60\n");
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 7) << describe(f);
  EXPECT_LT(f.seconds, kLiveness) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie run: rank 1 exited with code 7")) << describe(f);
  EXPECT_TRUE(contains(f.err, "sending SIGKILL")) << describe(f);
  EXPECT_FALSE(test::process_alive(test::read_pid(dir / "pid.0")));
}

TEST(CliEndToEnd, ChildrenOfRanksAreStoppedToo) {
  TempDir dir;
  // Rank 0 starts a background child (same process group) and waits on it.
  Finished f = run_sh(dir, {"-n", "2"},
                      "if [ $RANK = 1 ]; then\n"
                      "  while [ ! -s child.0 ]; do sleep 0.05; done; exit 4\n"
                      "fi\n"
                      "sleep 60 & echo $! > child.0; wait\n");
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 4) << describe(f);
  EXPECT_LT(f.seconds, kLiveness) << describe(f);
  pid_t child = test::read_pid(dir / "child.0");
  ASSERT_GT(child, 0);
  // It is not the launcher's child, so allow a moment for it to be reaped.
  EXPECT_TRUE(test::wait_gone(child, kLiveness)) << "pid " << child << " survived";
}

TEST(CliEndToEnd, LeftoverChildrenDoNotHoldTheJob) {
  TempDir dir;
  // Ranks succeed but leave a background child that keeps the output pipe open.
  Finished f = run_sh(dir, {"-n", "2", "--tag-output"},
                      "sleep 60 & echo $! > child.$RANK; echo done $RANK");
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 0) << describe(f);
  EXPECT_LT(f.seconds, kLiveness) << describe(f);
  EXPECT_TRUE(contains(f.out, "[1] done 1\n")) << describe(f);
  for (const char* r : {"0", "1"}) {
    pid_t child = test::read_pid(dir / (std::string("child.") + r));
    ASSERT_GT(child, 0);
    EXPECT_TRUE(test::wait_gone(child, kLiveness)) << "pid " << child << " survived the job";
  }
}

TEST(CliEndToEnd, ProgramNotFound) {
  TempDir dir;
  Finished f = test::run_collie({"run", "-n", "2", "/nonexistent/collie-test-program"}, dir);
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 127) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie run: cannot execute '/nonexistent/collie-test-program': "))
      << describe(f);
  EXPECT_TRUE(std::regex_search(f.err, std::regex("collie run: rank [01] exited with code 127")))
      << describe(f);

  f = test::run_collie({"run", "-n", "1", "collie-test-no-such-program-on-path"}, dir);
  EXPECT_EQ(f.code, 127) << describe(f);
  EXPECT_TRUE(contains(f.err, "cannot execute 'collie-test-no-such-program-on-path'"))
      << describe(f);
}

// ---------------------------------------------------------------- signals to the launcher

void check_forwarded(int sig) {
  TempDir dir;
  const std::string name = sig == SIGINT ? "INT" : sig == SIGHUP ? "HUP" : "TERM";
  const std::string script = "cd " + sh_quote(dir.str()) + " || exit 99\n" + "trap 'echo " +
                             name + " > got.$RANK; exit 0' " + name +
                             "\necho up > ready.$RANK\nsleep 60 & wait\n";
  test::Process p = test::start_process(
      {COLLIE_CLI_PATH, "run", "-n", "2", "--", "/bin/sh", "-c", script}, test::clean_env(),
      dir.path());
  ASSERT_TRUE(test::wait_for_files({dir / "ready.0", dir / "ready.1"}, kLimit))
      << "ranks did not start";
  const auto signalled = test::Clock::now();
  ASSERT_EQ(kill(p.pid, sig), 0);
  Finished f = test::wait_process(p, kLimit);
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_TRUE(f.exited) << describe(f);
  EXPECT_EQ(f.code, 128 + sig) << describe(f);
  EXPECT_LT(test::seconds_since(signalled), kLiveness) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie run: received SIG" + name)) << describe(f);
  // Both ranks got the very signal the launcher received.
  EXPECT_EQ(test::read_file(dir / "got.0"), name + "\n") << describe(f);
  EXPECT_EQ(test::read_file(dir / "got.1"), name + "\n") << describe(f);
}

TEST(CliEndToEnd, SigtermIsForwarded) { check_forwarded(SIGTERM); }
TEST(CliEndToEnd, SigintIsForwarded) { check_forwarded(SIGINT); }
TEST(CliEndToEnd, SighupIsForwarded) { check_forwarded(SIGHUP); }

TEST(CliEndToEnd, ASecondSignalSkipsTheGrace) {
  TempDir dir;
  // The ranks ignore SIGTERM; the second SIGTERM makes the launcher SIGKILL them now.
  const std::string script = "cd " + sh_quote(dir.str()) +
                             " || exit 99\ntrap '' TERM\necho $$ > pid.$RANK\nexec sleep 60\n";
  test::Process p = test::start_process(
      {COLLIE_CLI_PATH, "run", "-n", "2", "--", "/bin/sh", "-c", script}, test::clean_env(),
      dir.path());
  ASSERT_TRUE(test::wait_for_files({dir / "pid.0", dir / "pid.1"}, kLimit));
  ASSERT_EQ(kill(p.pid, SIGTERM), 0);
  // Wait until the first one has been handled (its message is out), then send another.
  for (auto t0 = test::Clock::now(); test::seconds_since(t0) < kLimit;) {
    if (contains(test::read_file(p.err_path), "stopping all ranks")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(p.pid, SIGTERM), 0);
  Finished f = test::wait_process(p, kLimit);
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 128 + SIGTERM) << describe(f);
  EXPECT_TRUE(contains(f.err, "while stopping; sending SIGKILL")) << describe(f);
  EXPECT_FALSE(test::process_alive(test::read_pid(dir / "pid.0")));
  EXPECT_FALSE(test::process_alive(test::read_pid(dir / "pid.1")));
}

// ---------------------------------------------------------------- output

TEST(CliEndToEnd, TagOutputPrefixesEveryLine) {
  TempDir dir;
  Finished f = run_sh(dir, {"-n", "2", "--tag-output"},
                      "printf 'one\\ntwo\\n'; echo \"err $RANK\" >&2; printf \"tail $RANK\"");
  ASSERT_FALSE(f.timed_out) << describe(f);
  ASSERT_EQ(f.code, 0) << describe(f);
  for (int r = 0; r < 2; ++r) {
    const std::string tag = "[" + std::to_string(r) + "] ";
    const auto one = f.out.find(tag + "one\n");
    const auto two = f.out.find(tag + "two\n");
    const auto tail = f.out.find(tag + "tail " + std::to_string(r) + "\n");
    ASSERT_NE(one, std::string::npos) << describe(f);
    ASSERT_NE(two, std::string::npos) << describe(f);
    ASSERT_NE(tail, std::string::npos) << describe(f);
    EXPECT_LT(one, two);
    EXPECT_LT(two, tail);
    EXPECT_TRUE(contains(f.err, tag + "err " + std::to_string(r) + "\n")) << describe(f);
  }
  // Every line carries a tag.
  std::istringstream lines(f.out + f.err);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(\[[01]\] .*)"))) << "untagged: " << line;
  }
  EXPECT_EQ(count, 8);
}

TEST(CliEndToEnd, TagOutputShowsTheFailingRanksLastWordsBeforeTheVerdict) {
  TempDir dir;
  Finished f = run_sh(dir, {"-n", "1", "--tag-output"}, "echo 'dying' >&2; exit 6");
  ASSERT_EQ(f.code, 6) << describe(f);
  const auto words = f.err.find("[0] dying\n");
  const auto verdict = f.err.find("collie run: rank 0 exited with code 6");
  ASSERT_NE(words, std::string::npos) << describe(f);
  ASSERT_NE(verdict, std::string::npos) << describe(f);
  EXPECT_LT(words, verdict);
}

TEST(CliEndToEnd, WithoutTagOutputRanksWriteDirectly) {
  TempDir dir;
  Finished f = run_sh(dir, {"-n", "2"}, "echo \"plain $RANK\"; echo \"oops $RANK\" >&2");
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_TRUE(contains(f.out, "plain 0\n")) << describe(f);
  EXPECT_TRUE(contains(f.out, "plain 1\n")) << describe(f);
  EXPECT_TRUE(contains(f.err, "oops 1\n")) << describe(f);
  EXPECT_FALSE(contains(f.out, "[0]"));
}

// ---------------------------------------------------------------- shared memory

class CliShmEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
    job_ = "clitest" + std::to_string(getpid()) + "x" + test::random_hex(6);
    uid_ = std::to_string(getuid());
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& p : made_) fs::remove(p, ec);
  }
  fs::path shm(const std::string& name) {
    fs::path p = fs::path("/dev/shm") / name;
    made_.push_back(p);
    return p;
  }
  std::string job_;
  std::string uid_;
  std::vector<fs::path> made_;
};

TEST_F(CliShmEndToEnd, LeftoversOfTheJobAreRemovedOthersKept) {
  TempDir dir;
  // Decoys: another job whose id extends ours, and an unrelated job.
  const fs::path decoy1 = shm("collie-" + uid_ + "-" + job_ + "Z-0-0");
  const fs::path decoy2 = shm("collie-" + uid_ + "-other" + job_ + "-0-0");
  test::write_file(decoy1, "decoy");
  test::write_file(decoy2, "decoy");
  const fs::path r0 = shm("collie-" + uid_ + "-" + job_ + "-x-0");
  const fs::path r1 = shm("collie-" + uid_ + "-" + job_ + "-x-1");
  Finished f = run_sh(dir, {"-n", "2", "--job-id", job_},
                      "echo data > /dev/shm/collie-$(id -u)-$COLLIE_JOB_ID-x-$RANK");
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_FALSE(fs::exists(r0)) << describe(f);
  EXPECT_FALSE(fs::exists(r1)) << describe(f);
  EXPECT_TRUE(fs::exists(decoy1));
  EXPECT_TRUE(fs::exists(decoy2));
  EXPECT_TRUE(contains(f.err, "removed 2 leftover shared-memory object(s) of job " + job_))
      << describe(f);
}

TEST_F(CliShmEndToEnd, SweptAfterAFailureToo) {
  TempDir dir;
  const fs::path r0 = shm("collie-" + uid_ + "-" + job_ + "-y-0");
  Finished f = run_sh(dir, {"-n", "2", "--job-id", job_},
                      "if [ $RANK = 0 ]; then echo d > /dev/shm/collie-$(id -u)-$COLLIE_JOB_ID-y-0; "
                      "exit 2; fi; exec sleep 60");
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 2) << describe(f);
  EXPECT_FALSE(fs::exists(r0)) << describe(f);
}

// A launcher killed with SIGKILL leaves its job's objects behind; the next launch
// removes those whose owner is dead and keeps those of live owners.
TEST_F(CliShmEndToEnd, StaleObjectsOfDeadOwnersAreRemovedAtLaunch) {
  TempDir dir;
  const fs::path stale = shm("collie-" + uid_ + "-" + job_ + "old-1-0");
  const fs::path live = shm("collie-" + uid_ + "-" + job_ + "live-1-0");
  const fs::path blank = shm("collie-" + uid_ + "-" + job_ + "blank-1-0");
  test::write_segment(live, getpid());
  test::write_file(blank, "not a segment header");
  // The rank checks that the stale object is gone before it starts. Any launcher
  // sweeps the user's stale objects, so one started meanwhile by a test running in
  // parallel may remove ours first; that is retried (a few times at most), so
  // that this launcher's own removal is what the message below shows.
  Finished f;
  for (int attempt = 0; attempt < 5; ++attempt) {
    test::write_segment(stale, test::dead_pid());
    f = run_sh(dir, {"-n", "1"}, "test ! -e " + sh_quote(stale.string()));
    if (contains(f.err, "stale shared-memory object(s) of dead processes")) break;
  }
  EXPECT_EQ(f.code, 0) << describe(f);
  EXPECT_FALSE(fs::exists(stale)) << describe(f);
  EXPECT_TRUE(fs::exists(live)) << describe(f);
  EXPECT_TRUE(fs::exists(blank)) << describe(f);
  EXPECT_TRUE(contains(f.err, "stale shared-memory object(s) of dead processes")) << describe(f);
}

// ---------------------------------------------------------------- with the library

// No /dev/shm entry of the job is left (the library's names start with this prefix).
std::vector<std::string> shm_entries_of(const std::string& job) {
  std::vector<std::string> out;
  const std::string prefix = "collie-" + std::to_string(getuid()) + "-" + job + "-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

TEST(CliWithLibrary, RanksOfARealProgramFindEachOther) {
  TempDir dir;
  const std::string job = "cliok" + test::random_hex(8);
  Finished f = test::run_collie({"run", "-n", "4", "--tag-output", "--timeout", "60", "--job-id",
                                 job, COLLIE_CLI_RANK_PROGRAM, "ok"},
                                dir);
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 0) << describe(f);
  for (int r = 0; r < 4; ++r) {
    const std::string want = "[" + std::to_string(r) + "] rank " + std::to_string(r) + " of 4 sum 10\n";
    EXPECT_TRUE(contains(f.out, want)) << want << describe(f);
  }
  EXPECT_TRUE(shm_entries_of(job).empty());
}

TEST(CliWithLibrary, ACrashingRankStopsTheJob) {
  TempDir dir;
  const std::string job = "clicrash" + test::random_hex(8);
  Finished f = test::run_collie({"run", "-n", "3", "--timeout", "60", "--job-id", job,
                                 COLLIE_CLI_RANK_PROGRAM, "crash"},
                                dir);
  ASSERT_FALSE(f.timed_out) << describe(f);
  EXPECT_EQ(f.code, 128 + SIGABRT) << describe(f);
  // The others wait in a barrier with a 60 s deadline; the launcher must not.
  EXPECT_LT(f.seconds, kLiveness) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie run: rank 1 was killed by signal SIGABRT")) << describe(f);
  EXPECT_TRUE(shm_entries_of(job).empty());
}

// ---------------------------------------------------------------- usage, help, info

TEST(CliEndToEnd, UsageErrorsExit2) {
  TempDir dir;
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"run"},
      {"run", "/bin/true"},
      {"run", "-n", "0", "/bin/true"},
      {"run", "-n", "2"},
      {"run", "-n", "2", "--bogus", "/bin/true"},
      {"run", "-n", "2", "--job-id", "bad-id", "/bin/true"},
      {"help", "frobnicate"},
      {"info", "extra"},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& a : args) joined += " " + a;
    Finished f = test::run_collie(args, dir);
    EXPECT_TRUE(f.exited) << joined;
    EXPECT_EQ(f.code, 2) << "collie" << joined << "\n" << describe(f);
    EXPECT_TRUE(contains(f.err, "usage:")) << "collie" << joined << "\n" << describe(f);
    EXPECT_EQ(f.out, "") << joined;
  }
}

TEST(CliEndToEnd, HelpAndVersion) {
  TempDir dir;
  Finished f = test::run_collie({"--help"}, dir);
  EXPECT_EQ(f.code, 0);
  EXPECT_TRUE(contains(f.out, "run ")) << f.out;
  EXPECT_TRUE(contains(f.out, "info ")) << f.out;

  f = test::run_collie({"--version"}, dir);
  EXPECT_EQ(f.code, 0);
  EXPECT_EQ(f.out, std::string("collie ") + COLLIE_EXPECTED_VERSION + "\n");

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"help", "run"}, {"run", "--help"}}) {
    f = test::run_collie(args, dir);
    EXPECT_EQ(f.code, 0) << describe(f);
    EXPECT_TRUE(contains(f.out, "usage: collie run -n N")) << describe(f);
    EXPECT_TRUE(contains(f.out, "--tag-output")) << describe(f);
  }
  f = test::run_collie({"help", "info"}, dir);
  EXPECT_EQ(f.code, 0);
  EXPECT_TRUE(contains(f.out, "usage: collie info")) << describe(f);
  // Every command takes -h/--help itself: the usage on stdout, success, nothing run.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"bench", "--help"},
                                               {"bench", "--op", "all", "-h"},
                                               {"info", "--help"}}) {
    f = test::run_collie(args, dir);
    EXPECT_EQ(f.code, 0) << describe(f);
    EXPECT_TRUE(contains(f.out, "usage: collie " + args[0])) << describe(f);
    EXPECT_FALSE(contains(f.out, "# collie bench:")) << describe(f);
  }
}

TEST(CliEndToEnd, InfoWithoutLauncher) {
  TempDir dir;
  Finished f = test::run_collie({"info"}, dir);
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_TRUE(contains(f.out, std::string("collie ") + COLLIE_EXPECTED_VERSION + "\n"));
  EXPECT_TRUE(std::regex_search(f.out, std::regex("backends: shm")));
  EXPECT_TRUE(contains(f.out, "default backend: shm"));
  EXPECT_TRUE(std::regex_search(f.out, std::regex("  backend: +shm \\(")));
  EXPECT_TRUE(std::regex_search(f.out, std::regex("world size: +1\n")));
  EXPECT_TRUE(std::regex_search(f.out, std::regex("timeout: +300 s \\(default\\)")));
  EXPECT_TRUE(
      std::regex_search(f.out, std::regex("vector reductions \\(float16, bfloat16, float32, "
                                          "float64, int32, int64\\): "
                                          "(avx512|avx2|portable) \\(.+\\)\n")))
      << f.out;
  EXPECT_TRUE(std::regex_search(
      f.out, std::regex("transparent huge pages: kernel mode [a-z]+; tensors of 2 MiB or more "
                        "ask for them\n")))
      << f.out;
  EXPECT_TRUE(std::regex_search(
      f.out, std::regex("copy path between ranks here: (staged|hybrid|single) \\((CPU vendor "
                        "unknown|[A-Za-z]+ family 0x[0-9a-f]+)\\)\n")))
      << f.out;
}

TEST(CliEndToEnd, InfoNamesTheCopyPathTheEnvironmentChose) {
  TempDir dir;
  Finished f = test::run_collie({"info"}, dir, {{"COLLIE_COPY_PATH", "hybrid"}});
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_TRUE(contains(f.out, "copy path between ranks here: hybrid (COLLIE_COPY_PATH)\n"))
      << f.out;
  f = test::run_collie({"info"}, dir, {{"COLLIE_COPY_PATH", "twice"}});
  EXPECT_EQ(f.code, 1) << describe(f);
  EXPECT_TRUE(contains(f.err, "COLLIE_COPY_PATH='twice' is not auto, single, hybrid or staged"))
      << describe(f);
}

TEST(CliEndToEnd, InfoNamesTheReductionKernelsTheEnvironmentChose) {
  TempDir dir;
  Finished f = test::run_collie({"info"}, dir, {{"COLLIE_REDUCE_KERNELS", "portable"}});
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_TRUE(contains(f.out, "int32, int64): portable (COLLIE_REDUCE_KERNELS)\n")) << f.out;
  EXPECT_TRUE(contains(f.out, "\n  COLLIE_REDUCE_KERNELS=portable\n")) << f.out;
  f = test::run_collie({"info"}, dir, {{"COLLIE_REDUCE_KERNELS", "sse9"}});
  EXPECT_EQ(f.code, 1) << describe(f);
  EXPECT_TRUE(contains(f.err, "COLLIE_REDUCE_KERNELS='sse9' is not auto, portable, avx2 or avx512"))
      << describe(f);
}

TEST(CliEndToEnd, InfoSaysWhenLargeTensorsDoNotAskForHugePages) {
  TempDir dir;
  Finished f = test::run_collie({"info"}, dir, {{"COLLIE_HUGE_PAGES", "0"}});
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_TRUE(contains(f.out, "tensors of 2 MiB or more do not ask (COLLIE_HUGE_PAGES=0)"))
      << f.out;
  EXPECT_TRUE(contains(f.out, "\n  COLLIE_HUGE_PAGES=0\n")) << f.out;
}

TEST(CliEndToEnd, InfoShowsTheEnvironment) {
  TempDir dir;
  Finished f = test::run_collie({"info"}, dir,
                                {{"COLLIE_RANK", "1"},
                                 {"COLLIE_WORLD_SIZE", "4"},
                                 {"COLLIE_JOB_ID", "abc"},
                                 {"COLLIE_TIMEOUT", "12"}});
  ASSERT_EQ(f.code, 0) << describe(f);
  EXPECT_TRUE(contains(f.out, "COLLIE_* (collie run)")) << f.out;
  EXPECT_TRUE(std::regex_search(f.out, std::regex("  rank: +1\n"))) << f.out;
  EXPECT_TRUE(std::regex_search(f.out, std::regex("world size: +4\n"))) << f.out;
  EXPECT_TRUE(std::regex_search(f.out, std::regex("job id: +abc\n"))) << f.out;
  EXPECT_TRUE(std::regex_search(f.out, std::regex("timeout: +12 s \\(COLLIE_TIMEOUT\\)"))) << f.out;
  EXPECT_TRUE(contains(f.out, "COLLIE_RANK=1\n")) << f.out;
}

TEST(CliEndToEnd, InfoRejectsABadEnvironment) {
  TempDir dir;
  Finished f = test::run_collie({"info"}, dir, {{"COLLIE_RANK", "5"}, {"COLLIE_WORLD_SIZE", "2"}});
  EXPECT_EQ(f.code, 1) << describe(f);
  EXPECT_TRUE(contains(f.err, "collie info: error:")) << describe(f);
  EXPECT_TRUE(contains(f.err, "COLLIE_RANK")) << describe(f);

  f = test::run_collie({"info"}, dir, {{"COLLIE_TIMEOUT", "soon"}});
  EXPECT_EQ(f.code, 1) << describe(f);
  EXPECT_TRUE(contains(f.err, "COLLIE_TIMEOUT")) << describe(f);

  f = test::run_collie({"info"}, dir, {{"COLLIE_BACKEND", "nosuchbackend"}});
  EXPECT_EQ(f.code, 1) << describe(f);
  EXPECT_TRUE(contains(f.err, "nosuchbackend")) << describe(f);
}

TEST(CliEndToEnd, InfoUnderTheLauncher) {
  TempDir dir;
  Finished f = test::run_collie(
      {"run", "-n", "2", "--tag-output", "--job-id", "infojob", COLLIE_CLI_PATH, "info"}, dir);
  ASSERT_EQ(f.code, 0) << describe(f);
  for (int r = 0; r < 2; ++r) {
    const std::string tag = "\\[" + std::to_string(r) + "\\]";
    EXPECT_TRUE(std::regex_search(f.out, std::regex(tag + "   rank: +" + std::to_string(r) + "\n")))
        << f.out;
    EXPECT_TRUE(std::regex_search(f.out, std::regex(tag + "   world size: +2\n"))) << f.out;
    EXPECT_TRUE(std::regex_search(f.out, std::regex(tag + "   job id: +infojob\n"))) << f.out;
  }
}

}  // namespace
}  // namespace collie::cli
