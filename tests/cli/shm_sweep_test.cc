// Unit tests of the shared-memory sweep (src/cli/shm_sweep.h), on a temp directory.
#include "cli/shm_sweep.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "test_util.h"

namespace collie::cli {
namespace {

namespace fs = std::filesystem;

TEST(CliShmSweep, Prefix) { EXPECT_EQ(job_shm_prefix(1000, "ab1"), "collie-1000-ab1"); }

TEST(CliShmSweep, NameMatching) {
  EXPECT_TRUE(shm_name_belongs_to_job("collie-1000-ab1-0-3", 1000, "ab1"));
  EXPECT_TRUE(shm_name_belongs_to_job("collie-1000-ab1-", 1000, "ab1"));
  EXPECT_TRUE(shm_name_belongs_to_job("collie-1000-ab1", 1000, "ab1"));
  EXPECT_TRUE(shm_name_belongs_to_job("sem.collie-1000-ab1-x", 1000, "ab1"));
  // Another job whose id starts with ours, or is a prefix of ours.
  EXPECT_FALSE(shm_name_belongs_to_job("collie-1000-ab12-0-3", 1000, "ab1"));
  EXPECT_FALSE(shm_name_belongs_to_job("collie-1000-ab1_x-0", 1000, "ab1"));
  EXPECT_FALSE(shm_name_belongs_to_job("collie-1000-ab-0-3", 1000, "ab1"));
  // Another user: uid 100 vs 1000.
  EXPECT_FALSE(shm_name_belongs_to_job("collie-100-ab1-0", 1000, "ab1"));
  EXPECT_FALSE(shm_name_belongs_to_job("collie-1000-ab1-0", 100, "ab1"));
  // Unrelated names.
  EXPECT_FALSE(shm_name_belongs_to_job("xcollie-1000-ab1-0", 1000, "ab1"));
  EXPECT_FALSE(shm_name_belongs_to_job("sem.other", 1000, "ab1"));
  EXPECT_FALSE(shm_name_belongs_to_job("", 1000, "ab1"));
  // An empty job id matches nothing.
  EXPECT_FALSE(shm_name_belongs_to_job("collie-1000-", 1000, ""));
  EXPECT_FALSE(shm_name_belongs_to_job("collie-1000--x", 1000, ""));
}

TEST(CliShmSweep, RemovesOnlyTheJobsFiles) {
  test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const uid_t uid = getuid();
  const std::string mine = job_shm_prefix(uid, "job7");
  const std::string other_user = "collie-" + std::to_string(uid + 1) + "-job7-0";
  for (const std::string& name :
       {mine + "-0-0", mine + "-0-1", mine, "sem." + mine + "-s", mine + "8-0-0",
        job_shm_prefix(uid, "jo") + "-0", other_user, std::string("unrelated")}) {
    test::write_file(dir / name, "x");
  }
  fs::create_directory(dir / (mine + "-dir"));  // not a regular file: left alone

  auto removed = sweep_job_shm(uid, "job7", dir.str());
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected = {mine, mine + "-0-0", mine + "-0-1", "sem." + mine + "-s"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  for (const auto& name : expected) EXPECT_FALSE(fs::exists(dir / name)) << name;
  EXPECT_TRUE(fs::exists(dir / (mine + "8-0-0")));
  EXPECT_TRUE(fs::exists(dir / (job_shm_prefix(uid, "jo") + "-0")));
  EXPECT_TRUE(fs::exists(dir / other_user));
  EXPECT_TRUE(fs::exists(dir / "unrelated"));
  EXPECT_TRUE(fs::exists(dir / (mine + "-dir")));
}

TEST(CliShmSweep, EmptyJobIdAndMissingDirAreHarmless) {
  test::TempDir dir;
  test::write_file(dir / ("collie-" + std::to_string(getuid()) + "--x"), "x");
  EXPECT_TRUE(sweep_job_shm(getuid(), "", dir.str()).empty());
  EXPECT_TRUE(sweep_job_shm(getuid(), "abc", dir.str() + "/does-not-exist").empty());
}

}  // namespace
}  // namespace collie::cli
