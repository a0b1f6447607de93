// Unit tests of the launcher's pure parts (src/cli/launcher.h): rank environments,
// exit descriptions, the python directory lookup.
#include "cli/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <map>

#include "test_util.h"

namespace collie::cli {
namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> as_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const auto& e : env) {
    auto eq = e.find('=');
    EXPECT_NE(eq, std::string::npos) << e;
    EXPECT_EQ(m.count(e.substr(0, eq)), 0u) << "duplicate " << e;
    m[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return m;
}

TEST(CliLauncherEnv, SetsEveryLaunchVariable) {
  RankEnvSpec spec;
  spec.rank = 2;
  spec.world_size = 4;
  spec.job_id = "abcx12";
  auto m = as_map(rank_environment({"HOME=/h", "PATH=/bin"}, spec));
  EXPECT_EQ(m["HOME"], "/h");
  EXPECT_EQ(m["PATH"], "/bin");
  EXPECT_EQ(m["COLLIE_RANK"], "2");
  EXPECT_EQ(m["COLLIE_WORLD_SIZE"], "4");
  EXPECT_EQ(m["COLLIE_LOCAL_RANK"], "2");
  EXPECT_EQ(m["COLLIE_LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(m["COLLIE_JOB_ID"], "abcx12");
  EXPECT_EQ(m["RANK"], "2");
  EXPECT_EQ(m["WORLD_SIZE"], "4");
  EXPECT_EQ(m["LOCAL_RANK"], "2");
  EXPECT_EQ(m["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(m.count("COLLIE_TIMEOUT"), 0u);
  EXPECT_EQ(m.count("PYTHONPATH"), 0u);
}

TEST(CliLauncherEnv, ReplacesInheritedValues) {
  RankEnvSpec spec;
  spec.rank = 0;
  spec.world_size = 2;
  spec.job_id = "j";
  spec.timeout = "7.5";
  auto m = as_map(rank_environment(
      {"COLLIE_RANK=9", "RANK=9", "WORLD_SIZE=99", "COLLIE_JOB_ID=old", "COLLIE_TIMEOUT=1",
       "COLLIE_BACKEND=shm", "EMPTY="},
      spec));
  EXPECT_EQ(m["COLLIE_RANK"], "0");
  EXPECT_EQ(m["RANK"], "0");
  EXPECT_EQ(m["WORLD_SIZE"], "2");
  EXPECT_EQ(m["COLLIE_JOB_ID"], "j");
  EXPECT_EQ(m["COLLIE_TIMEOUT"], "7.5");
  EXPECT_EQ(m["COLLIE_BACKEND"], "shm");
  EXPECT_EQ(m["EMPTY"], "");
}

TEST(CliLauncherEnv, InheritedTimeoutKeptWithoutOption) {
  RankEnvSpec spec;
  spec.job_id = "j";
  auto m = as_map(rank_environment({"COLLIE_TIMEOUT=12"}, spec));
  EXPECT_EQ(m["COLLIE_TIMEOUT"], "12");
}

TEST(CliLauncherEnv, PythonPathIsPrepended) {
  RankEnvSpec spec;
  spec.job_id = "j";
  spec.python_dir = "/opt/collie/python";
  EXPECT_EQ(as_map(rank_environment({"PYTHONPATH=/a:/b"}, spec))["PYTHONPATH"],
            "/opt/collie/python:/a:/b");
  EXPECT_EQ(as_map(rank_environment({"PYTHONPATH="}, spec))["PYTHONPATH"], "/opt/collie/python");
  EXPECT_EQ(as_map(rank_environment({}, spec))["PYTHONPATH"], "/opt/collie/python");
  spec.python_dir.reset();
  EXPECT_EQ(as_map(rank_environment({"PYTHONPATH=/a"}, spec))["PYTHONPATH"], "/a");
}

TEST(CliLauncherEnv, PythonDirNextToExecutable) {
  test::TempDir dir;
  fs::create_directories(dir / "bin");
  EXPECT_FALSE(python_dir_next_to((dir / "bin" / "collie").string()).has_value());
  fs::create_directories(dir / "python");
  auto found = python_dir_next_to((dir / "bin" / "collie").string());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, fs::canonical(dir / "python").string());
  EXPECT_FALSE(python_dir_next_to("").has_value());
}

TEST(CliLauncherEnv, SelfExecutableIsThisTest) {
  std::string self = self_executable();
  EXPECT_FALSE(self.empty());
  EXPECT_TRUE(fs::exists(self));
}

TEST(CliLauncherExit, Descriptions) {
  EXPECT_EQ(describe_exit(2, RankExit{false, 3}), "collie run: rank 2 exited with code 3");
  EXPECT_EQ(describe_exit(0, RankExit{true, SIGKILL}),
            "collie run: rank 0 was killed by signal SIGKILL");
  EXPECT_EQ(describe_exit(1, RankExit{true, SIGSEGV}),
            "collie run: rank 1 was killed by signal SIGSEGV");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(signal_name(12345), "signal 12345");
}

TEST(CliLauncherExit, Codes) {
  EXPECT_FALSE(is_failure(RankExit{false, 0}));
  EXPECT_TRUE(is_failure(RankExit{false, 1}));
  EXPECT_TRUE(is_failure(RankExit{true, SIGTERM}));
  EXPECT_EQ(exit_code_of(RankExit{false, 0}), 0);
  EXPECT_EQ(exit_code_of(RankExit{false, 42}), 42);
  EXPECT_EQ(exit_code_of(RankExit{true, SIGINT}), 130);
  EXPECT_EQ(exit_code_of(RankExit{true, SIGTERM}), 143);
}

}  // namespace
}  // namespace collie::cli
