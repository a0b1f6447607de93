// Eager rooted calls (src/backends/shm/step_op.h): a staged rooted call lets the
// ranks that read nobody's data (the root of broadcast and scatter_tensor, the
// non-roots of reduce and gather_into_tensor) return once their data is in
// their slots: in a call of one step before the others arrive. Checked here: their inputs may be
// overwritten and freed at once without changing anyone's result; back-to-back eager calls with
// moving roots stay in step, and a root of small calls runs up to kStepLines - 1 = 31 calls ahead;
// a mismatch they did not wait for is a CommError at a later call on the group (the next that waits
// for every rank, or at most kStepRecords - kStepLines + 1 = 33 eager calls later;
// src/backends/shm/layout.h), at destroy_group or at release; COLLIE_DEBUG=detail makes every rank
// raise inside the mismatched call itself.
#include <cstring>
#include <string>

#include "backends/shm/layout.h"
#include "comm_test_util.h"

namespace collie::testing {
namespace {

// How many small eager calls a rank may make ahead of its slowest peer, and how
// many steps later at the latest it compares a call it did not wait for.
constexpr int kRunAhead = static_cast<int>(collie::detail::kStepLines) - 1;
constexpr int kLatestCheck =
    static_cast<int>(collie::detail::kStepRecords - collie::detail::kStepLines) + 1;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Runs fn, which must throw CommError; returns its message.
std::string comm_error_of(const std::function<void()>& fn, const std::string& what) {
  try {
    fn();
  } catch (const collie::CommError& e) {
    return e.what();
  }
  RCHECK(false) << what << ": no CommError";
  return "";
}

// Overwrites a tensor with a value no expectation uses.
void scribble(Tensor& t) {
  Tensor junk = make_tensor(t.shape(), t.dtype(), [](int64_t) { return 99.0; });
  std::memcpy(t.data_ptr(), junk.data_ptr(), t.nbytes());
}

class EagerRooted : public ::testing::TestWithParam<int> {};

// Every rooted op in turn on `n` ranks, roots moving, no barrier between calls:
// the eager ranks run ahead into the next call while the others still read the
// last one; each eager rank scribbles over (and then frees) its input as soon
// as it has returned.
void inputs_reused_at_once(int n, int rank, const std::vector<int64_t>& counts) {
  const auto world = iota_ranks(n);
  const DType dt = DType::Float32;
  int index = 0;
  for (int round = 0; round < 3; ++round) {
    for (int64_t count : counts) {
      const int root = (index++) % n;
      const std::string what = "count " + std::to_string(count) + " root " + std::to_string(root);
      {
        Tensor x = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
        Tensor y = broadcast(x, root);
        scribble(x);
        check_tensor(
            y, dt, {count}, [&](int64_t i) { return pattern_value(dt, root, i); },
            "broadcast " + what);
      }
      {
        Tensor x = make_tensor({count}, dt,
                               [&](int64_t i) { return rank_value(dt, ReduceOp::SUM, rank, i); });
        Tensor y = reduce(x, root);
        scribble(x);
        if (rank == root) {
          check_tensor(
              y, dt, {count},
              [&](int64_t i) { return expected_reduction(dt, ReduceOp::SUM, world, i); },
              "reduce " + what);
        }
      }
      {
        Tensor x = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
        Tensor y = gather_into_tensor(x, root);
        scribble(x);
        if (rank == root) {
          check_tensor(
              y, dt, {count * n},
              [&](int64_t i) { return pattern_value(dt, static_cast<int>(i / count), i % count); },
              "gather " + what);
        }
      }
      {
        // Per-rank pieces of `count` elements, at most 4 KiB each when count <= 1024.
        Tensor x = make_tensor({count * n}, dt,
                               [&](int64_t i) { return pattern_value(dt, 500 + rank, i); });
        Tensor y = scatter_tensor(x, root);
        scribble(x);
        check_tensor(
            y, dt, {count},
            [&](int64_t i) { return pattern_value(dt, 500 + root, rank * count + i); },
            "scatter " + what);
      }
    }
  }
}

// Counts at the 4 KiB boundary (the data in a small slot) and just above it (a
// slot), in one step.
TEST_P(EagerRooted, InputsReusedAtOnceAndCallsBackToBack) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) { inputs_reused_at_once(n, rank, {1, 8, 1024, 1025}); });
}

// Calls of several steps (4 KiB slots, private tensors staged: COLLIE_CMA=0),
// whose eager ranks return once their last step is published.
TEST_P(EagerRooted, InputsReusedAtOnceInCallsOfSeveralSteps) {
  const int n = GetParam();
  RunOptions o = small_chunks();
  o.env.push_back({"COLLIE_CMA", "0"});
  run_ranks(
      n,
      [n](int rank) {
        inputs_reused_at_once(n, rank, {1025, 5000});
      },
      o);
}

// The root of small broadcasts (data in the step line, or in a small slot up to
// 4 KiB) runs up to kRunAhead calls ahead: it makes that many broadcasts and only
// then tells the others (a p2p message) to start theirs. With less run-ahead this
// deadlocks (the root waits in a later broadcast for ranks that wait for its
// message) and fails with TimeoutError. Then every rank checks its results, and a
// barrier checks every call. The same for the non-roots of reduce, which tell the
// root.
TEST_P(EagerRooted, SmallCallsRunAheadAsFarAsTheStepLinesAllow) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    const DType dt = DType::Float32;
    auto value = [](int call, int64_t i) { return 10.0 * call + static_cast<double>(i % 7); };
    for (int64_t count : {int64_t{8}, int64_t{1024}}) {  // 32 B: a line; 4 KiB: a small slot
      const std::string size = std::to_string(count * 4) + " bytes, ";
      std::vector<Tensor> got;
      if (rank != 0) recv(Tensor::zeros({1}), 0);  // the root has made its broadcasts
      for (int call = 0; call < kRunAhead; ++call) {
        Tensor x =
            make_tensor({count}, dt, [&](int64_t i) { return rank == 0 ? value(call, i) : -1.0; });
        got.push_back(broadcast(x, 0));
      }
      if (rank == 0) {
        for (int peer = 1; peer < n; ++peer) send(Tensor::ones({1}), peer);
      }
      for (int call = 0; call < kRunAhead; ++call) {
        check_tensor(
            got[static_cast<size_t>(call)], dt, {count}, [&](int64_t i) { return value(call, i); },
            size + "broadcast " + std::to_string(call));
      }
      // reduce: the non-roots run ahead; the root starts once they all have.
      got.clear();
      if (rank == 0) {
        for (int peer = 1; peer < n; ++peer) recv(Tensor::zeros({1}), peer);
      }
      for (int call = 0; call < kRunAhead; ++call) {
        got.push_back(
            reduce(make_tensor({count}, dt, [&](int64_t i) { return value(call, i); }), 0));
      }
      if (rank != 0) send(Tensor::ones({1}), 0);
      if (rank == 0) {
        for (int call = 0; call < kRunAhead; ++call) {
          check_tensor(
              got[static_cast<size_t>(call)], dt, {count},
              [&](int64_t i) { return n * value(call, i); },
              size + "reduce " + std::to_string(call));
        }
      }
    }
    barrier();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, EagerRooted, ::testing::Values(2, 3, 4), world_size_name);

// Rank 1 broadcasts 3 elements where ranks 0 (root) and 2 broadcast 2. Rank 1
// waits for the root and raises in the call; the root returned at once and rank
// 2 only read the root's data, so both raise at their next call on the group,
// naming the broadcast, its seq, and every rank's call.
TEST(EagerRootedMismatch, SeenAtTheNextCall) {
  run_ranks(3, [](int rank) {
    Tensor x = Tensor::ones({rank == 1 ? 3 : 2});
    if (rank == 1) {
      std::string msg = comm_error_of([&] { broadcast(x, 0); }, "mismatched rank");
      RCHECK(contains(msg, "x2") && contains(msg, "x3")) << msg;
      return;
    }
    Tensor y = broadcast(x, 0);  // eager root, or a non-root that saw a matching root
    std::string msg = comm_error_of([&] { barrier(); }, "the call after the broadcast");
    RCHECK(contains(msg, "broadcast float32 x2") && contains(msg, "x3")) << msg;
    RCHECK(contains(msg, "seq 1")) << "names the broadcast's sequence number: " << msg;
    RCHECK(contains(msg, "next call")) << msg;
  });
}

// Eager calls in a row: the root of small broadcasts runs ahead of the others (up
// to kRunAhead calls) and compares their calls later. Rank 2 broadcasts 3
// elements in the fourth call where the others broadcast 2: rank 2 raises in that
// call (it waits for the root), the root and rank 1 in a later one, at the latest
// once the records of that call would be reused (kLatestCheck steps on), all
// naming the fourth call.
TEST(EagerRootedMismatch, SeenByARootRunningAheadAFewCallsLater) {
  run_ranks(3, [](int rank) {
    int failed_at = -1;
    std::string msg;
    for (int call = 0; call < 3 + kLatestCheck + 8 && failed_at < 0; ++call) {
      Tensor x = Tensor::ones({rank == 2 && call == 3 ? 3 : 2});
      try {
        Tensor y = broadcast(x, 0);
        check_tensor(
            y, DType::Float32, {2}, [](int64_t) { return 1.0; }, "call " + std::to_string(call));
      } catch (const collie::CommError& e) {
        failed_at = call;
        msg = e.what();
      }
    }
    if (rank == 2) {
      RCHECK_EQ(failed_at, 3) << msg;
    } else {
      RCHECK(failed_at >= 4 && failed_at <= 3 + kLatestCheck)
          << "rank " << rank << " failed at call " << failed_at << ": " << msg;
    }
    RCHECK(contains(msg, "broadcast float32 x2") && contains(msg, "x3")) << msg;
    RCHECK(contains(msg, "seq 4")) << "names the fourth call: " << msg;
    RCHECK(contains(msg, "group '" + std::string(WORLD) + "'")) << "names the group: " << msg;
  });
}

// Both ranks of a group take the other for the root of a reduce: neither waits
// for anyone, both return. destroy_group then checks the call and raises.
TEST(EagerRootedMismatch, LastCallCheckedByDestroyGroup) {
  run_ranks(2, [](int rank) {
    create_group("pair", {0, 1});
    Tensor y = reduce(Tensor::ones({4}), 1 - rank, ReduceOp::SUM, "pair");
    std::string msg = comm_error_of([&] { destroy_group("pair"); }, "destroy_group");
    RCHECK(contains(msg, "reduce(sum) float32 x4 root 0") && contains(msg, "root 1")) << msg;
    RCHECK(contains(msg, "group 'pair'")) << msg;
    // The group is gone all the same, and the world still works.
    RCHECK_THROWS(barrier("pair"), collie::RuntimeError, "pair", "does not exist");
    Tensor sum = all_reduce(Tensor::ones({2})).first;
    check_tensor(
        sum, DType::Float32, {2}, [](int64_t) { return 2.0; }, "all_reduce after");
  });
}

// The same for release(): each rank gathers to itself (root = its own rank).
// release() raises, and the job is released anyway (init() works again).
TEST(EagerRootedMismatch, LastCallCheckedByRelease) {
  run_ranks(2, [](int rank) {
    Tensor y = scatter_tensor(Tensor::ones({4}), rank);
    std::string msg = comm_error_of([&] { release(); }, "release");
    RCHECK(contains(msg, "scatter_tensor float32 x2 root 0") && contains(msg, "root 1")) << msg;
    RCHECK(!is_initialized());
    init();
    Tensor sum = all_reduce(Tensor::ones({2})).first;
    check_tensor(
        sum, DType::Float32, {2}, [](int64_t) { return 2.0; }, "all_reduce after init");
  });
}

// COLLIE_DEBUG=detail: no eager calls, so every rank raises inside the broadcast.
TEST(EagerRootedMismatch, DebugDetailRaisesInTheCallOnEveryRank) {
  RunOptions detail;
  detail.env = {{"COLLIE_DEBUG", "DETAIL"}};
  run_ranks(
      3,
      [](int rank) {
        Tensor x = Tensor::ones({rank == 1 ? 3 : 2});
        std::string msg = comm_error_of([&] { broadcast(x, 0); }, "broadcast");
        RCHECK(contains(msg, "x2") && contains(msg, "x3")) << msg;
        RCHECK(!contains(msg, "next call")) << msg;
      },
      detail);
}

}  // namespace
}  // namespace collie::testing
