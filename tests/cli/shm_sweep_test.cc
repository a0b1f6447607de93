// Unit tests of the shared-memory sweep (src/cli/shm_sweep.h), on a temp directory.
#include "cli/shm_sweep.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "segment_files.h"
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

// ---------------------------------------------------------------- launch-time stale sweep

using test::dead_pid;
using test::write_segment;

TEST(CliStaleSweep, RemovesOnlySegmentsOfDeadOwners) {
  test::TempDir dir;
  const uid_t uid = getuid();
  const std::string p = "collie-" + std::to_string(uid) + "-";
  const pid_t dead = dead_pid();
  write_segment(dir / (p + "jobA-1-0"), dead);                  // stale: removed
  write_segment(dir / (p + "jobA-1-1"), dead);                  // stale: removed
  write_segment(dir / (p + "jobB-1-0"), getpid());              // owner alive
  write_segment(dir / (p + "jobC-1-0"), 1);                     // init: alive (or EPERM)
  write_segment(dir / (p + "jobD-1-0"), dead, false);           // header not initialised
  write_segment(dir / (p + "jobE-1-0"), dead, true, 16);        // too small for a header
  write_segment(dir / (p + "jobF-1-0"), 0);                     // pid 0: unknown
  write_segment(dir / ("sem." + p + "jobA-s"), dead);           // a semaphore: never ours to judge
  write_segment(dir / ("collie-" + std::to_string(uid + 1) + "-jobA-1-0"), dead);  // other uid
  write_segment(dir / "unrelated", dead);
  fs::create_directory(dir / (p + "jobG-dir"));
  fs::create_symlink(dir / (p + "jobA-1-0"), dir / (p + "jobH-link"));

  auto removed = sweep_stale_shm(uid, dir.str());
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{p + "jobA-1-0", p + "jobA-1-1"}));
  for (const char* kept : {"jobB-1-0", "jobC-1-0", "jobD-1-0", "jobE-1-0", "jobF-1-0", "jobG-dir"}) {
    EXPECT_TRUE(fs::exists(dir / (p + kept))) << kept;
  }
  EXPECT_TRUE(fs::is_symlink(dir / (p + "jobH-link")));
  EXPECT_TRUE(fs::exists(dir / ("sem." + p + "jobA-s")));
  EXPECT_TRUE(fs::exists(dir / ("collie-" + std::to_string(uid + 1) + "-jobA-1-0")));
  EXPECT_TRUE(fs::exists(dir / "unrelated"));
}

TEST(CliStaleSweep, Verdicts) {
  test::TempDir dir;
  const uid_t uid = getuid();
  const std::string p = "collie-" + std::to_string(uid) + "-";
  write_segment(dir / (p + "a"), dead_pid());
  write_segment(dir / (p + "b"), getpid());
  write_segment(dir / (p + "c"), getpid(), false);
  test::write_file(dir / (p + "d"), "");  // created, not yet sized by its owner
  int dfd = open(dir.str().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dfd, 0);
  EXPECT_EQ(check_stale_segment(dfd, (p + "a").c_str(), uid), StaleCheck::kOwnerDead);
  EXPECT_EQ(check_stale_segment(dfd, (p + "b").c_str(), uid), StaleCheck::kOwnerAlive);
  EXPECT_EQ(check_stale_segment(dfd, (p + "c").c_str(), uid), StaleCheck::kUnreadable);
  EXPECT_EQ(check_stale_segment(dfd, (p + "d").c_str(), uid), StaleCheck::kUnreadable);
  EXPECT_EQ(check_stale_segment(dfd, (p + "missing").c_str(), uid), StaleCheck::kUnreadable);
  EXPECT_EQ(check_stale_segment(dfd, "other", uid), StaleCheck::kNotCollie);
  // Owned by us but named for another uid: not ours to judge.
  EXPECT_EQ(check_stale_segment(dfd, (p + "a").c_str(), uid + 1), StaleCheck::kNotCollie);
  close(dfd);
}

TEST(CliStaleSweep, MissingDirIsHarmless) {
  EXPECT_TRUE(sweep_stale_shm(getuid(), "/does/not/exist").empty());
}

}  // namespace
}  // namespace collie::cli
