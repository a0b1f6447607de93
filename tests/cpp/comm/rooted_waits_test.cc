// Rooted calls wait only for the ranks they need. On the direct paths
// (src/backends/shm/direct_ops.cc, DirectOp) broadcast, scatter_tensor and
// gather_into_tensor whose non-roots read or write the root's tensors (shared
// tensors, or private ones read and written with CMA) wait only for the root,
// and the root waits for every rank before it returns; staged through the
// slots (step_op.h, eager calls) in one step, a non-root of broadcast and
// scatter waits only for the root, one of gather for nobody, and the root of
// broadcast and scatter for nobody. Checked, on 3 ranks, every element on
// every rank:
//   - a non-root returns before another non-root has even called: rank `late`
//     calls only once rank `early` has told it, with a message, that its call
//     returned (were `early` to wait for `late`, neither would go on, and the
//     group's deadline would fail the test);
//   - the root's tensors stay valid until the last non-root is done with them:
//     the root overwrites its input as soon as its call returns, and a
//     non-root's input is overwritten as soon as its own call returns;
//   - a mismatch between the two non-roots fails the call on the rank that
//     differs from the root, and the other non-root's next call; the root's
//     call where it waits for every rank (direct), else its next call.
// And with 5 ranks and CMA, a gather whose root reads its 4 non-roots' inputs
// itself (more than kCmaMaxReadersOfOneProcess writers): the non-roots wait for
// the root, and may overwrite their inputs once their calls return.
#include <cstring>
#include <string>

#include "cma_probe.h"
#include "comm_test_util.h"

namespace collie::testing {
namespace {

// Elements per rank: 64 KiB of float32, inside every direct path's sizes (shared
// tensors from 16 KiB, CMA from 16 KiB where the group prefers single copies).
constexpr int64_t kCount = 16 << 10;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Element i of group rank r's input: different on every rank and at every index.
double input_value(int r, int64_t i) { return r * 100000.0 + static_cast<double>(i % 9973); }

// kStaged: private tensors through the slots (COLLIE_CMA=0), in one step.
enum class Tensors { kShared, kPrivate, kStaged };

std::string tensors_name(const ::testing::TestParamInfo<Tensors>& info) {
  switch (info.param) {
    case Tensors::kShared:
      return "shared";
    case Tensors::kPrivate:
      return "private_cma";
    case Tensors::kStaged:
      break;
  }
  return "staged";
}

// Where private tensors are read with CMA at 64 KiB and above on any machine
// (COLLIE_CMA=always: even with more ranks than CPUs), or staged (COLLIE_CMA=0);
// the deadline makes a rank that waited for one that never comes fail the test
// instead of hanging.
RunOptions options_for(Tensors tensors) {
  RunOptions o;
  o.collie_timeout_seconds = 20;
  if (tensors == Tensors::kPrivate) {
    o.env = {{"COLLIE_COPY_PATH", "single"}, {"COLLIE_CMA", "always"}};
  } else if (tensors == Tensors::kStaged) {
    o.env = {{"COLLIE_CMA", "0"}};
  }
  return o;
}

// Group rank r's input of `count` elements, a shared tensor or a private one.
Tensor input_of(Tensors tensors, int r, int64_t count) {
  Tensor x = make_tensor({count}, DType::Float32, [r](int64_t i) { return input_value(r, i); });
  if (tensors != Tensors::kShared) return x;
  Tensor s = empty_shared({count}, DType::Float32);
  s.copy_from(x);
  return s;
}

// Overwrites a tensor with a value no expectation uses.
void scribble(Tensor& t) {
  Tensor junk = make_tensor(t.shape(), t.dtype(), [](int64_t) { return -7.0; });
  std::memcpy(t.data_ptr(), junk.data_ptr(), t.nbytes());
}

// One rooted call of the test, with its input and the result every rank expects.
struct RootedCall {
  const char* name;
  int64_t input_count;  // per rank, for n ranks
  Tensor (*call)(const Tensor& x, int root);
  void (*check)(const Tensor& out, int rank, int root, int n, const std::string& what);
};

const RootedCall kCalls[] = {
    {"broadcast", kCount, [](const Tensor& x, int root) { return broadcast(x, root); },
     [](const Tensor& out, int, int root, int, const std::string& what) {
       check_tensor(
           out, DType::Float32, {kCount}, [root](int64_t i) { return input_value(root, i); }, what);
     }},
    {"scatter_tensor", 0, [](const Tensor& x, int root) { return scatter_tensor(x, root); },
     [](const Tensor& out, int rank, int root, int, const std::string& what) {
       check_tensor(
           out, DType::Float32, {kCount},
           [rank, root](int64_t i) { return input_value(root, rank * kCount + i); }, what);
     }},
    {"gather_into_tensor", kCount,
     [](const Tensor& x, int root) { return gather_into_tensor(x, root); },
     [](const Tensor& out, int rank, int root, int n, const std::string& what) {
       if (rank != root) {
         check_tensor(
             out, DType::Float32, {1}, [](int64_t) { return 0.0; }, what + " (non-root)");
         return;
       }
       check_tensor(
           out, DType::Float32, {n * kCount},
           [](int64_t i) { return input_value(static_cast<int>(i / kCount), i % kCount); }, what);
     }},
};

class RootedWaits : public ::testing::TestWithParam<Tensors> {};

TEST_P(RootedWaits, NonRootsReturnWithoutWaitingForEachOther) {
  const Tensors tensors = GetParam();
  run_ranks(
      3,
      [&](int rank) {
        for (const RootedCall& c : kCalls) {
          for (int root = 0; root < 3; ++root) {
            const int early = (root + 1) % 3, late = (root + 2) % 3;
            const int64_t count = c.input_count != 0 ? c.input_count : 3 * kCount;
            Tensor x = input_of(tensors, rank, count);
            const std::string what = std::string(c.name) + " root " + std::to_string(root);
            if (rank == late) recv(Tensor::zeros({1}), early);  // `early` returned
            Tensor out = c.call(x, root);
            // A rank returns once nobody needs its input any more: the root of
            // a direct call once every non-root is done with it, a staged
            // call's ranks once their data is in their slots, a direct
            // gather's non-root once its piece is in the root's output.
            scribble(x);
            if (rank == early) send(Tensor::ones({1}), late);
            c.check(out, rank, root, 3, what);
          }
        }
      },
      options_for(tensors));
}

// Ranks 0 (root) and 1 broadcast kCount elements, rank 2 one more, and only once
// rank 1's call has returned (a message tells it). Rank 2 waits for the root and
// raises in the call. Rank 1 read the root's data, which matched its call, and
// returned; its next call on the group raises, naming the broadcast. The root
// raises in the call where it waits for every rank (the direct paths), at its
// next call where it waits for nobody (staged; private tensors where CMA does
// not work stage too).
TEST_P(RootedWaits, MismatchBetweenNonRootsFailsWhereEachRankComparesTheCalls) {
  const Tensors tensors = GetParam();
  const bool direct =
      tensors == Tensors::kShared || (tensors == Tensors::kPrivate && cma_works_here());
  run_ranks(
      3,
      [&](int rank) {
        Tensor x = input_of(tensors, rank, rank == 2 ? kCount + 1 : kCount);
        const std::string sizes = "x" + std::to_string(kCount);
        const std::string other = "x" + std::to_string(kCount + 1);
        if (rank == 2) recv(Tensor::zeros({1}), 1);  // rank 1's call returned
        if (rank == 2 || (rank == 0 && direct)) {
          try {
            broadcast(x, 0);
            RCHECK(false) << "rank " << rank << ": the mismatched broadcast must fail in the call";
          } catch (const CommError& e) {
            const std::string m = e.what();
            RCHECK(contains(m, sizes) && contains(m, other)) << m;
            RCHECK(!contains(m, "seen after the call returned")) << m;
          }
          return;
        }
        Tensor y = broadcast(x, 0);
        check_tensor(
            y, DType::Float32, {kCount}, [](int64_t i) { return input_value(0, i); },
            "rank " + std::to_string(rank) + "'s broadcast");
        if (rank == 1) send(Tensor::ones({1}), 2);
        try {
          barrier();
          RCHECK(false) << "the barrier after the mismatched broadcast must fail";
        } catch (const CommError& e) {
          const std::string m = e.what();
          RCHECK(contains(m, "broadcast float32 " + sizes) && contains(m, other)) << m;
          RCHECK(contains(m, "seq 1")) << "names the broadcast's sequence number: " << m;
          RCHECK(contains(m, "next call")) << m;
        }
      },
      options_for(tensors));
}

INSTANTIATE_TEST_SUITE_P(Tensors, RootedWaits,
                         ::testing::Values(Tensors::kShared, Tensors::kPrivate, Tensors::kStaged),
                         tensors_name);

// 5 ranks, CMA: the root of a gather reads its 4 non-roots' inputs itself, so
// each non-root waits for the root before it returns, and may then overwrite its
// input; the root's result holds every rank's original piece.
TEST(RootedWaitsGather, RootReadingManyNonRootsKeepsTheirInputsUntilItIsDone) {
  run_ranks(
      5,
      [](int rank) {
        for (int root = 0; root < 5; root += 2) {
          Tensor x = input_of(Tensors::kPrivate, rank, kCount);
          Tensor out = gather_into_tensor(x, root);
          scribble(x);
          kCalls[2].check(out, rank, root, 5, "gather_into_tensor root " + std::to_string(root));
        }
      },
      options_for(Tensors::kPrivate));
}

}  // namespace
}  // namespace collie::testing
