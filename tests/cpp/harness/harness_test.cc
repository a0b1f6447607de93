// Tests of the multi-rank harness itself: exit statuses, failure messages, the deadline,
// the environment each rank gets, and the in-child check macros.
#include <fcntl.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "check.h"
#include "collie/errors.h"
#include "rank_runner.h"
#include "values.h"

namespace collie::testing {
namespace {

RunOptions no_init() {
  RunOptions o;
  o.call_init = false;
  return o;
}

TEST(Harness, AllRanksPassing) {
  EXPECT_TRUE(run_ranks(3, [](int) {}, no_init()));
}

TEST(Harness, ReportsExitCodesSignalsAndMessages) {
  auto statuses = run_ranks_collect(
      3,
      [](int rank) {
        if (rank == 1) RCHECK_EQ(rank, 7) << "context " << 42;
        if (rank == 2) ::raise(SIGKILL);
      },
      no_init());
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_TRUE(statuses[1].exited());
  EXPECT_EQ(statuses[1].exit_code(), 1);
  EXPECT_NE(statuses[1].message.find("harness_test.cc"), std::string::npos) << statuses[1].message;
  EXPECT_NE(statuses[1].message.find("1 vs 7"), std::string::npos) << statuses[1].message;
  EXPECT_NE(statuses[1].message.find("context 42"), std::string::npos) << statuses[1].message;
  EXPECT_TRUE(statuses[2].signaled());
  EXPECT_EQ(statuses[2].term_signal(), SIGKILL);
  EXPECT_NE(statuses[2].describe().find("signal 9"), std::string::npos);
}

TEST(Harness, CollieExceptionsAreNamed) {
  auto statuses = run_ranks_collect(
      1, [](int) { throw collie::ValueError("bad value"); }, no_init());
  EXPECT_NE(statuses[0].message.find("collie::ValueError: bad value"), std::string::npos)
      << statuses[0].message;
}

TEST(Harness, DeadlineKillsHangingRanks) {
  RunOptions o = no_init();
  o.deadline_seconds = 0.5;
  auto start = std::chrono::steady_clock::now();
  auto statuses = run_ranks_collect(
      2,
      [](int rank) {
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
      },
      o);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(elapsed, 30.0);
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_TRUE(statuses[1].killed_at_deadline);
  EXPECT_FALSE(statuses[1].ok());
}

TEST(Harness, EnvironmentOfEachRank) {
  RunOptions o = no_init();
  o.collie_timeout_seconds = 7;
  o.env = {{"COLLIE_SHM_SLOT_BYTES", "4096"}};
  EXPECT_TRUE(run_ranks(
      3,
      [](int rank) {
        auto env = [](const char* name) {
          const char* v = std::getenv(name);
          return std::string(v ? v : "<unset>");
        };
        RCHECK_EQ(env("COLLIE_RANK"), std::to_string(rank));
        RCHECK_EQ(env("COLLIE_WORLD_SIZE"), std::string("3"));
        RCHECK_EQ(env("COLLIE_LOCAL_RANK"), std::to_string(rank));
        RCHECK_EQ(env("COLLIE_LOCAL_WORLD_SIZE"), std::string("3"));
        RCHECK_EQ(env("COLLIE_TIMEOUT"), std::string("7"));
        RCHECK_EQ(env("COLLIE_SHM_SLOT_BYTES"), std::string("4096"));
        RCHECK_EQ(env("COLLIE_JOB_ID"), last_job_id());
      },
      o));
  std::string first = last_job_id();
  run_ranks(1, [](int) {}, no_init());
  EXPECT_NE(first, last_job_id()) << "every run needs its own job id";
}

TEST(Harness, SharedMemoryIsSeenByAllRanks) {
  SharedMemory shared(4096);
  auto* counter = new (shared.data()) std::atomic<int>(0);
  EXPECT_TRUE(run_ranks(4, [&](int) { counter->fetch_add(1); }, no_init()));
  EXPECT_EQ(counter->load(), 4);
}

// A /dev/shm/collie-<uid>-<job id>-* entry left after a run is a failure (and is removed).
TEST(Harness, ReportsLeakedSharedMemory) {
  EXPECT_NONFATAL_FAILURE(
      run_ranks(
          1,
          [](int) {
            std::string name = "/collie-" + std::to_string(getuid()) + "-" +
                               std::getenv("COLLIE_JOB_ID") + "-leaked";
            int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
            RCHECK_GE(fd, 0);
            ::close(fd);
          },
          no_init()),
      "left shared memory behind");
  EXPECT_TRUE(leftover_shm_entries(last_job_id()).empty());
}

TEST(Harness, SoftChecksCollectEveryFailure) {
  SoftChecks soft;
  soft.check("first", [] { RCHECK_EQ(1, 2); });
  soft.check("second", [] {});
  SOFT_THROWS(soft, (void)0, collie::ValueError);
  soft.check("third", [] { throw collie::CommError("peer died"); });
  EXPECT_EQ(soft.failures(), 3u);
  try {
    soft.finish();
    FAIL() << "finish() did not throw";
  } catch (const CheckFailure& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("3 failed check(s)"), std::string::npos) << m;
    EXPECT_NE(m.find("first: "), std::string::npos) << m;
    EXPECT_NE(m.find("returned normally"), std::string::npos) << m;
    EXPECT_NE(m.find("third: collie::CommError: peer died"), std::string::npos) << m;
  }
}

TEST(Harness, CheckMacrosThrowWithLocation) {
  try {
    RCHECK(1 + 1 == 3) << "arithmetic";
    FAIL() << "RCHECK did not throw";
  } catch (const CheckFailure& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("harness_test.cc:"), std::string::npos) << m;
    EXPECT_NE(m.find("1 + 1 == 3"), std::string::npos) << m;
    EXPECT_NE(m.find("arithmetic"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(RCHECK_EQ(2, 2));
  EXPECT_THROW(RCHECK_LT(3, 2), CheckFailure);
  EXPECT_NO_THROW(RCHECK_THROWS(throw collie::ValueError("For op_x, bad"), collie::ValueError,
                                "op_x", "bad"));
  // Exact class required: a subclass is a failure for RCHECK_THROWS, fine for _DERIVED.
  EXPECT_THROW(RCHECK_THROWS(throw collie::CommError("x"), collie::RuntimeError),
               CheckFailure);
  EXPECT_NO_THROW(RCHECK_THROWS_DERIVED(throw collie::CommError("x"), collie::RuntimeError));
  // Message substrings are checked.
  EXPECT_THROW(RCHECK_THROWS(throw collie::ValueError("abc"), collie::ValueError, "xyz"),
               CheckFailure);
  // Not throwing is a failure.
  EXPECT_THROW(RCHECK_THROWS((void)0, collie::ValueError), CheckFailure);
}

TEST(Harness, ClosedFormValuesAreExactAndSmall) {
  for (DType dt : all_dtypes()) {
    for (ReduceOp op : all_reduce_ops()) {
      for (int64_t i = 0; i < 200; ++i) {
        double v = expected_reduction(dt, op, {0, 1, 2, 3}, i);
        EXPECT_LE(v, 127) << dtype_name(dt);
        EXPECT_GE(v, dt == DType::UInt8 || dt == DType::Bool ? 0 : -128) << dtype_name(dt);
      }
    }
  }
  // bool: or/and both take both values over the indices.
  bool seen_or[2] = {false, false}, seen_and[2] = {false, false};
  for (int64_t i = 0; i < 10; ++i) {
    seen_or[static_cast<int>(expected_reduction(DType::Bool, ReduceOp::SUM, {0, 1, 2, 3}, i))] = true;
    seen_and[static_cast<int>(expected_reduction(DType::Bool, ReduceOp::PROD, {0, 1, 2, 3}, i))] = true;
  }
  EXPECT_TRUE(seen_or[0] && seen_or[1]);
  EXPECT_TRUE(seen_and[0] && seen_and[1]);
}

// make_tensor and check_tensor work a chunk at a time (values.h): elements on
// both sides of chunk boundaries, in every dtype, land where they belong, and a
// check reports how many differ and the first few, wherever they are.
TEST(Harness, MakeAndCheckTensorAcrossChunks) {
  const int64_t n = 3 * detail::kValueChunk + 7;
  for (DType dt : all_dtypes()) {
    SCOPED_TRACE(dtype_name(dt));
    auto value = [dt](int64_t i) { return pattern_value(dt, 3, i); };
    Tensor t = make_tensor({n}, dt, value);
    const std::vector<double> stored = values_of(t);
    ASSERT_EQ(static_cast<int64_t>(stored.size()), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(stored[static_cast<size_t>(i)],
                dt == DType::Bool ? double(value(i) != 0) : value(i))
          << "element " << i;
    }
    EXPECT_NO_THROW(check_tensor(t, dt, {n}, value, "same"));
    // Wrong at two neighbours inside the first chunk, at its last element, the
    // first of the second and the very last one.
    const int64_t last_of_first = detail::kValueChunk - 1;
    const std::vector<int64_t> wrong_at = {5, 6, last_of_first, last_of_first + 1, n - 1};
    auto off = [&](int64_t i) {
      const bool wrong = std::find(wrong_at.begin(), wrong_at.end(), i) != wrong_at.end();
      if (!wrong) return value(i);
      return dt == DType::Bool ? double(value(i) == 0) : value(i) + 1;
    };
    try {
      check_tensor(t, dt, {n}, off, "shifted");
      ADD_FAILURE() << "check_tensor accepted wrong values";
    } catch (const CheckFailure& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("shifted [" + std::string(dtype_name(dt)) + "]"), std::string::npos) << m;
      EXPECT_NE(m.find("5 of " + std::to_string(n) + " elements differ"), std::string::npos) << m;
      for (int64_t i : wrong_at) {
        EXPECT_NE(m.find("[" + std::to_string(i) + "] got"), std::string::npos) << i << ": " << m;
      }
    }
  }
  // Dtype and shape are checked before any element.
  Tensor f = make_tensor({4}, DType::Float32, [](int64_t i) { return i; });
  EXPECT_THROW(check_tensor(
                   f, DType::Int32, {4}, [](int64_t i) { return i; }, "dtype"),
               CheckFailure);
  EXPECT_THROW(check_tensor(
                   f, DType::Float32, {2, 2}, [](int64_t i) { return i; }, "shape"),
               CheckFailure);
}

// A bool element is compared as the byte it is: one the library wrote as 2
// (a sum instead of an or) is a mismatch, not "true".
TEST(Harness, CheckTensorRejectsABoolByteOtherThanZeroOrOne) {
  Tensor t = make_tensor({3}, DType::Bool, [](int64_t) { return 1; });
  static_cast<unsigned char*>(t.data_ptr())[1] = 2;
  try {
    check_tensor(
        t, DType::Bool, {3}, [](int64_t) { return 1; }, "or");
    ADD_FAILURE() << "check_tensor accepted a bool byte of 2";
  } catch (const CheckFailure& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("1 of 3 elements differ: [1] got 2 want 1"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace collie::testing
