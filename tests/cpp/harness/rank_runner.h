// collie/testing rank_runner.h — run a test body on N forked ranks of a collie job.
//
// run_ranks(n, body) forks n child processes from the (single-threaded) gtest process.
// Child r gets the environment of `collie run` (COLLIE_RANK=r, COLLIE_WORLD_SIZE=n,
// COLLIE_LOCAL_RANK=r, COLLIE_LOCAL_WORLD_SIZE=n, COLLIE_JOB_ID unique per call,
// COLLIE_TIMEOUT) plus RunOptions::env, calls collie::init(), body(r), collie::release()
// and _exit(0). An exception escaping body (a failed RCHECK, a collie error) prints
// "rank R: <message>" to stderr and exits 1. The parent waits up to
// RunOptions::deadline_seconds (a hang guard only: it SIGKILLs every child after it),
// then reports every rank that did not exit 0 with gtest's ADD_FAILURE, and checks that
// the job left no /dev/shm/collie-<uid>-<job id>-* entry behind.
//
// The parent never creates threads or calls collie itself, so fork() stays safe.
//
// Example:
//   TEST(AllReduce, Ones) {
//     collie::testing::run_ranks(4, [](int rank) {
//       auto [y, h] = collie::all_reduce(collie::Tensor::ones({3}));
//       RCHECK_EQ(y.item(0), 4.0);
//     });
//   }
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace collie::testing {

struct RunOptions {
  // COLLIE_TIMEOUT given to the children: the engine's deadline for every wait.
  double collie_timeout_seconds = 30;
  // The parent's hang guard: children still running after this are killed.
  double deadline_seconds = 120;
  // Extra environment, e.g. {"COLLIE_SHM_SLOT_BYTES", "4096"} to force chunking.
  std::vector<std::pair<std::string, std::string>> env;
  // false: the children do not call collie::init()/release() around the body.
  bool call_init = true;
};

// How one rank's process ended.
struct RankStatus {
  int rank = -1;
  int wait_status = 0;              // as returned by waitpid
  bool killed_at_deadline = false;  // the harness killed it (hang guard)
  std::string message;              // what the child reported before failing, if anything

  bool exited() const;
  int exit_code() const;            // -1 unless exited()
  bool signaled() const;
  int term_signal() const;          // 0 unless signaled()
  bool ok() const { return exited() && exit_code() == 0 && !killed_at_deadline; }
  // "exited with code 1: <message>", "killed by signal 9 (Killed)", ...
  std::string describe() const;
};

// Runs body on n ranks and ADD_FAILUREs for every rank that did not exit 0 (listing
// each failed rank, its exit status and message). Returns true when all ranks passed.
bool run_ranks(int n, const std::function<void(int rank)>& body, const RunOptions& opts = {});

// Like run_ranks, but expects that some ranks fail or are killed (fault tests): it only
// returns each rank's status, in rank order. The shared-memory leak check still applies.
std::vector<RankStatus> run_ranks_collect(int n, const std::function<void(int rank)>& body,
                                          const RunOptions& opts = {});

// Memory shared between the parent and every child of later run_ranks calls: an anonymous
// MAP_SHARED mapping made in the parent before fork. Use std::atomic members in it to
// coordinate ranks outside collie (e.g. to check that a barrier really waits).
class SharedMemory {
 public:
  explicit SharedMemory(size_t bytes);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The /dev/shm entries named collie-<uid>-<job_id>-* or exactly collie-<uid>-<job_id>
// (the engine's naming contract, docs/launcher.md).
std::vector<std::string> leftover_shm_entries(const std::string& job_id);

// The job id of the most recent run_ranks / run_ranks_collect call ("" before any).
const std::string& last_job_id();

}  // namespace collie::testing
