// The CMA path (src/backends/shm/cma.h): all_gather, broadcast, gather and
// scatter on ordinary tensors of 64 KiB to 8 MiB per rank (16 KiB to 32 MiB where
// the group prefers single copies, copy_path.h; all_gather from 8 KiB there), and all_to_all's
// pieces of 32 KiB to 512 KiB (and up), read peers' memory with process_vm_readv; where the group
// prefers single copies, all_reduce (from 128 KiB) and reduce (from 32 KiB) up
// to 16 MiB read their slices and write the results with process_vm_writev. Every
// dtype (two where a case repeats under each copy path), world sizes 1-4, roots, sub-groups, sizes
// on both sides of the thresholds; with COLLIE_CMA=0 on one rank the whole group falls back to the
// slots (no mismatch), and results are the same either way. With more ranks than
// CPUs collectives stage instead (but for all_to_all's pieces from 512 KiB, or
// from 128 KiB where the group prefers single copies); ctest runs the world cases again with
// COLLIE_CMA=always (cma_forced_always) so that 3 and 4 ranks take the CMA path
// on small machines too.
#include "backends/shm/cma.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include "backends/shm/huge_page_probe.h"
#include "backends/shm/layout.h"
#include "cma_probe.h"
#include "comm_test_util.h"
#include "memory_pages.h"
#include "runtime/env.h"

namespace collie::testing {
namespace {

// Has collie count `cpus` CPUs (more_ranks_than_cpus; 0: the machine's) in
// this test and the ranks it forks, until it ends: both sides of the rules
// that depend on it run on any machine.
class AssumedCpus {
 public:
  explicit AssumedCpus(unsigned cpus) { collie::detail::assume_cpus_for_testing(cpus); }
  ~AssumedCpus() { collie::detail::assume_cpus_for_testing(0); }
  AssumedCpus(const AssumedCpus&) = delete;
  AssumedCpus& operator=(const AssumedCpus&) = delete;
};

// Elements per rank: below the CMA range of groups that prefer single copies
// (all_gather from 8 KiB, the others from 16 KiB), one below the others' (64
// KiB), two inside (uneven), one above.
std::vector<int64_t> counts_for(DType dt) {
  const int64_t es = static_cast<int64_t>(element_size(dt));
  return {(6 << 10) / es,      (12 << 10) / es,    (60 << 10) / es,
          (64 << 10) / es + 3, (1 << 20) / es + 1, (9 << 20) / es};
}

// Bytes group rank i sends to group rank j in the all_to_all check: a mix of
// pieces read through CMA (32 KiB to 512 KiB, odd sizes too; from 16 KiB and
// beyond 512 KiB where the group prefers single copies; with more ranks than
// CPUs the 200 KiB ones there too, and the 600 KiB ones), small and large staged
// ones, and empty ones, different for every pair.
int64_t pair_bytes(int i, int j) {
  static const int64_t palette[] = {0,         1000,     40 << 10,      (200 << 10) + 24,
                                    600 << 10, 33 << 10, (20 << 10) + 8};
  return palette[(i * 3 + j * 2 + (i == j ? 1 : 0)) % 7];
}

void run_all_to_all_mix(int rank, const std::vector<int>& members, const std::string& group,
                        DType dt, SoftChecks& soft) {
  const int n = static_cast<int>(members.size());
  const int me = index_in(members, rank);
  const int64_t es = static_cast<int64_t>(element_size(dt));
  std::vector<int64_t> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n));
  int64_t sent = 0, received = 0;
  for (int p = 0; p < n; ++p) {
    send[static_cast<size_t>(p)] = pair_bytes(me, p) / es;
    recv[static_cast<size_t>(p)] = pair_bytes(p, me) / es;
    sent += send[static_cast<size_t>(p)];
    received += recv[static_cast<size_t>(p)];
  }
  // Element k of the piece from i to j holds pattern_value(dt, 16 * i + j, k).
  auto value_at = [&](const std::vector<int64_t>& counts, int fixed, bool fixed_is_sender,
                      int64_t index) {
    int p = 0;
    while (index >= counts[static_cast<size_t>(p)]) index -= counts[static_cast<size_t>(p++)];
    const int from = fixed_is_sender ? fixed : p, to = fixed_is_sender ? p : fixed;
    return pattern_value(dt, 16 * from + to, index);
  };
  const std::string what =
      "all_to_all " + std::string(dtype_name(dt)) + " mixed pieces on " + group;
  soft.check(what, [&] {
    Tensor x = make_tensor({sent}, dt, [&](int64_t k) { return value_at(send, me, true, k); });
    auto [y, h] = all_to_all_single_with_output_shape({received}, x, recv, send, group);
    check_tensor(
        y, dt, {received}, [&](int64_t k) { return value_at(recv, me, false, k); }, what);
  });
  // The list form. Odd group ranks pass their pieces out of order in one tensor
  // (the piece for rank j + 1 before the one for j), read piece by piece where
  // each lies, through CMA or the slots, each from its own address; even ones
  // pass them in order (one packed input), so the two kinds meet in every call.
  soft.check(what + ", list form", [&] {
    const bool apart = me % 2 == 1;
    std::vector<Tensor> pieces;
    std::vector<int64_t> rows;
    for (int i = 0; i < n; ++i) {
      const int p = apart ? n - 1 - i : i;
      const int64_t count = send[static_cast<size_t>(p)];
      pieces.push_back(
          make_tensor({count}, dt, [&](int64_t k) { return pattern_value(dt, 16 * me + p, k); }));
      rows.push_back(count);
    }
    std::vector<Tensor> views = Tensor::cat(pieces).split(rows);
    if (apart) std::reverse(views.begin(), views.end());
    std::vector<Shape> shapes;
    for (int p = 0; p < n; ++p) shapes.push_back({recv[static_cast<size_t>(p)]});
    auto [ys, h] = all_to_all_with_output_shape(shapes, views, group);
    for (int p = 0; p < n; ++p) {
      check_tensor(
          ys[static_cast<size_t>(p)], dt, shapes[static_cast<size_t>(p)],
          [&](int64_t k) { return pattern_value(dt, 16 * p + me, k); },
          what + ", list form, from group rank " + std::to_string(p));
    }
  });
}

// Every dtype, and two: the CMA paths move bytes, so which path a call takes and
// what it must get right depend on its bytes per rank, not its dtype; 4-byte and
// 1-byte elements give both aligned and odd byte counts (counts_for). The runs
// that repeat the world's cases under each copy path, and the group cases, take
// the two; the plain world run takes every dtype.
const std::vector<DType> kEveryDtype = {DType::Float32, DType::Int8, DType::Float64,
                                        DType::BFloat16, DType::Bool};
const std::vector<DType> kTwoElementWidths = {DType::Float32, DType::Int8};

void run_data_movers(int rank, const std::vector<int>& members, const std::string& group,
                     const std::vector<DType>& dtypes, SoftChecks& soft) {
  const int n = static_cast<int>(members.size());
  const int me = index_in(members, rank);
  const int root_index = n - 1;  // group rank of the root
  const int root = members[static_cast<size_t>(root_index)];
  for (DType dt : dtypes) {
    run_all_to_all_mix(rank, members, group, dt, soft);
    for (int64_t count : counts_for(dt)) {
      const std::string what =
          std::string(dtype_name(dt)) + " count=" + std::to_string(count) + " on " + group;
      soft.check("all_gather " + what, [&] {
        Tensor x = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
        auto [y, h] = all_gather_into_tensor(x, group);
        check_tensor(
            y, dt, {count * n},
            [&](int64_t i) {
              return pattern_value(dt, members[static_cast<size_t>(i / count)], i % count);
            },
            "all_gather " + what);
      });
      soft.check("broadcast " + what, [&] {
        Tensor x = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
        Tensor y = broadcast(x, root, group);
        check_tensor(
            y, dt, {count}, [&](int64_t i) { return pattern_value(dt, root, i); },
            "broadcast " + what);
      });
      soft.check("gather " + what, [&] {
        Tensor x = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
        Tensor y = gather_into_tensor(x, root, group);
        if (me == root_index) {
          check_tensor(
              y, dt, {count * n},
              [&](int64_t i) {
                return pattern_value(dt, members[static_cast<size_t>(i / count)], i % count);
              },
              "gather " + what);
        }
      });
      soft.check("scatter " + what, [&] {
        Tensor x =
            make_tensor({count * n}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
        Tensor y = scatter_tensor(x, root, group);
        check_tensor(
            y, dt, {count}, [&](int64_t i) { return pattern_value(dt, root, me * count + i); },
            "scatter " + what);
      });
    }
  }
}

// Elements per rank for the reductions: below both CMA ranges, inside reduce's
// only, inside both (uneven); for two cases also one whose slices take several
// 256 KiB pieces at 4 ranks (every element is checked, which costs more than
// the call: the others stay small).
std::vector<int64_t> reduction_counts(DType dt, ReduceOp op) {
  const int64_t es = static_cast<int64_t>(element_size(dt));
  std::vector<int64_t> counts = {(30 << 10) / es, (32 << 10) / es + 3, (160 << 10) / es + 5};
  if ((dt == DType::Float32 && op == ReduceOp::SUM) || (dt == DType::Int8 && op == ReduceOp::MAX)) {
    counts.push_back((2 << 20) / es + 5);
  }
  return counts;
}

void run_reductions(int rank, const std::vector<int>& members, const std::string& group,
                    SoftChecks& soft) {
  const int n = static_cast<int>(members.size());
  const int root = members[static_cast<size_t>(n - 1)];
  for (DType dt : {DType::Float32, DType::Int8, DType::Float64, DType::BFloat16, DType::Bool}) {
    for (ReduceOp op : all_reduce_ops()) {
      for (int64_t count : reduction_counts(dt, op)) {
        const std::string what = std::string(dtype_name(dt)) + " " +
                                 std::string(reduce_op_name(op)) +
                                 " count=" + std::to_string(count) + " on " + group;
        auto input = [&] {
          return make_tensor({count}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
        };
        auto expected = [&](int64_t i) { return expected_reduction(dt, op, members, i); };
        soft.check("all_reduce " + what, [&] {
          auto [y, h] = all_reduce(input(), op, group);
          check_tensor(y, dt, {count}, expected, "all_reduce " + what);
        });
        soft.check("reduce " + what, [&] {
          Tensor y = reduce(input(), root, op, group);
          if (rank == root) check_tensor(y, dt, {count}, expected, "reduce " + what);
        });
      }
    }
  }
}

class CmaWorld : public ::testing::TestWithParam<int> {};

TEST_P(CmaWorld, DataMoversEveryDtypeAcrossTheThresholds) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    run_data_movers(rank, iota_ranks(n), std::string(WORLD), kEveryDtype, soft);
    soft.finish();
  });
}

// What ctest runs under each forced copy path and with COLLIE_CMA=always
// (CMakeLists.txt): the thresholds each path moves, in two dtypes.
TEST_P(CmaWorld, DataMoversTwoWidthsAcrossTheThresholds) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    run_data_movers(rank, iota_ranks(n), std::string(WORLD), kTwoElementWidths, soft);
    soft.finish();
  });
}

TEST_P(CmaWorld, ReductionsEveryDtypeAndOpAcrossTheThresholds) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    run_reductions(rank, iota_ranks(n), std::string(WORLD), soft);
    soft.finish();
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CmaWorld, ::testing::Values(1, 2, 3, 4), world_size_name);

// An unsorted sub-group: group ranks differ from world ranks.
TEST(Cma, UnsortedSubGroup) {
  run_ranks(4, [](int rank) {
    create_group("tri", {3, 0, 2});
    if (rank == 1) return;
    SoftChecks soft;
    run_data_movers(rank, {3, 0, 2}, "tri", kTwoElementWidths, soft);
    run_reductions(rank, {3, 0, 2}, "tri", soft);
    soft.finish();
  });
}

// COLLIE_CMA=0 on one rank turns CMA off for the whole group at its rendezvous:
// the ranks still agree on every call's path, so nothing mismatches.
TEST(Cma, DisabledOnOneRankFallsBackEverywhere) {
  run_ranks(3, [](int rank) {
    SoftChecks soft;
    if (rank == 1) setenv("COLLIE_CMA", "0", 1);
    create_group("after", {0, 1, 2});  // agreed with rank 1's verdict: no CMA
    run_data_movers(rank, {0, 1, 2}, "after", kTwoElementWidths, soft);
    soft.finish();
  });
}

// Proves which path a call on private tensors takes: rank 0 passes a shared
// tensor, so the call mismatches and the message names each rank's path.
// CMA where the system allows it and every rank has a CPU; staged with more ranks
// than CPUs (docs/algorithms.md), where waiting for each owner to run costs more.
class CmaPath : public ::testing::TestWithParam<int> {};

// What the mismatch message says about group rank r's call: from "rank r: " to
// the next rank's part.
std::string part_of_rank(const std::string& message, int r) {
  const std::string start = "rank " + std::to_string(r) + ": ";
  const size_t at = message.find(start);
  if (at == std::string::npos) return "";
  const size_t end = message.find("; rank ", at);
  return message.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// On rank `rank` of the `n` ranks of `group` (world ranks 0..n-1): `call` on
// `count` floats per rank, where rank 0 passes a shared tensor, must fail as
// mismatched, and the message must show that ranks 1.. made `call_name`'s call
// and whether they took the CMA path (`cma_expected`). A rooted call whose
// ranks do not all wait for each other (step_op.h: eager calls, and broadcast,
// gather and scatter on the direct paths) fails inside the call on every rank
// only with COLLIE_DEBUG=detail, which the tests that probe them set.
// `count`: as the call names it (a rank's piece); `input_count`: the input's
// elements where they differ (scatter's N pieces).
void check_path(int rank, int n, int64_t count, const std::string& call_name,
                const std::function<void(const Tensor&)>& call, bool cma_expected,
                int64_t input_count = 0) {
  const int64_t in = input_count != 0 ? input_count : count;
  Tensor x = rank == 0 ? empty_shared({in}) : Tensor::ones({in});
  if (rank == 0) x.copy_from(Tensor::ones({in}));
  try {
    call(x);
    RCHECK(false) << call_name << ": mixing shared and private tensors must fail";
  } catch (const CommError& e) {
    const std::string m = e.what();
    const std::string what = call_name + " float32 x" + std::to_string(count);
    const std::string first = part_of_rank(m, 0);
    RCHECK(contains(first, what) && contains(first, "on shared tensors")) << m;
    for (int r = 1; r < n; ++r) {
      const std::string part = part_of_rank(m, r);
      RCHECK(contains(part, what)) << m;
      RCHECK_EQ(contains(part, "on private tensors (CMA)"), cma_expected) << call_name << ": " << m;
    }
  }
}

// As check_path, for sizes where a shared tensor would take the same path as a
// private one: rank 0 passes int32 instead, the same bytes, so every rank picks
// the path it would have, and the call fails as mismatched all the same.
void check_path_against_int32(int rank, int n, int64_t count, const std::string& call_name,
                              const std::function<void(const Tensor&)>& call, bool cma_expected) {
  Tensor x = rank == 0 ? Tensor::ones({count}, DType::Int32) : Tensor::ones({count});
  try {
    call(x);
    RCHECK(false) << call_name << ": mixing dtypes must fail";
  } catch (const CommError& e) {
    const std::string m = e.what();
    RCHECK(contains(part_of_rank(m, 0), call_name + " int32 x" + std::to_string(count))) << m;
    for (int r = 1; r < n; ++r) {
      const std::string part = part_of_rank(m, r);
      RCHECK(contains(part, call_name + " float32 x" + std::to_string(count))) << m;
      RCHECK_EQ(contains(part, "on private tensors (CMA)"), cma_expected) << call_name << ": " << m;
    }
  }
}

void check_all_gather_path(int rank, int n, int64_t count, bool cma_expected) {
  check_path(
      rank, n, count, "all_gather_into_tensor", [](const Tensor& x) { all_gather_into_tensor(x); },
      cma_expected);
}

TEST_P(CmaPath, PrivateMidSizedCallsUseCmaWhereTheSystemAllowsIt) {
  const int n = GetParam();
  const bool expected = cma_works_here() && static_cast<unsigned>(n) <=
                                                std::max(1u, std::thread::hardware_concurrency());
  run_ranks(n,
            [expected, n](int rank) { check_all_gather_path(rank, n, (1 << 20) / 4, expected); });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CmaPath, ::testing::Values(2, 3), world_size_name);

// Calls of 9 MiB per rank take CMA only where the group prefers single copies
// (COLLIE_COPY_PATH=single or hybrid, or an Intel or AMD Zen 5 CPU;
// copy_path.h), the slots' streaming stores elsewhere; a rank preferring staging
// makes the whole group stage, a hybrid rank makes it hybrid, so the ranks still
// agree. Shown as above, by a mismatch that names each path.
class CmaCopyPath : public ::testing::TestWithParam<std::string> {};

// Runs `body(rank)` on 3 ranks between init() and release(), with
// COLLIE_COPY_PATH=single on ranks 0 and 1 and `setting` on rank 2, and CMA for
// collectives whatever the CPU count (3 ranks on fewer CPUs would stage anyway).
void run_with_copy_path(const std::string& setting, const std::function<void(int)>& body) {
  RunOptions o;
  o.call_init = false;
  run_ranks(
      3,
      [&](int rank) {
        setenv("COLLIE_COPY_PATH", rank == 2 ? setting.c_str() : "single", 1);
        setenv("COLLIE_CMA", "always", 1);
        setenv("COLLIE_DEBUG", "detail", 1);  // every rank raises in the call (check_path)
        init();
        body(rank);
        release();
      },
      o);
}

TEST_P(CmaCopyPath, LargeCallsReadWithCmaOnlyWhereEveryRankPrefersSingleCopies) {
  const std::string setting = GetParam();  // rank 2's COLLIE_COPY_PATH; the others' is single
  const bool expected = cma_works_here() && setting != "staged";
  run_with_copy_path(setting,
                     [&](int rank) { check_all_gather_path(rank, 3, (9 << 20) / 4, expected); });
}

// Where the group prefers single copies, broadcast reads with CMA at any size
// from 16 KiB, the other data movers below 32 MiB per rank (direct_ops.h), but
// for all_gather, gather and scatter where the group is hybrid (copy_path.h),
// which have no limit.
TEST_P(CmaCopyPath, BroadcastReadsWithCmaAtAnySizeWhereEveryRankPrefersSingleCopies) {
  const std::string setting = GetParam();
  const bool single = cma_works_here() && setting != "staged";
  run_with_copy_path(setting, [&](int rank) {
    // Each call fails its group (check_path), so each gets one of its own.
    create_group("large_broadcast", {0, 1, 2});
    check_path(
        rank, 3, (40 << 20) / 4, "broadcast",
        [](const Tensor& x) { broadcast(x, 1, "large_broadcast"); }, single);
    create_group("large_all_gather", {0, 1, 2});
    check_path(
        rank, 3, (33 << 20) / 4, "all_gather_into_tensor",
        [](const Tensor& x) { all_gather_into_tensor(x, "large_all_gather"); },
        cma_works_here() && setting == "hybrid");
    // Nor gather and scatter, where hybrid.
    create_group("large_gather", {0, 1, 2});
    check_path(
        rank, 3, (33 << 20) / 4, "gather_into_tensor",
        [](const Tensor& x) { gather_into_tensor(x, 1, "large_gather"); },
        cma_works_here() && setting == "hybrid");
    create_group("large_scatter", {0, 1, 2});
    check_path(
        rank, 3, (33 << 20) / 4, "scatter_tensor",
        [](const Tensor& x) { scatter_tensor(x, 1, "large_scatter"); },
        cma_works_here() && setting == "hybrid", 3 * ((33 << 20) / 4));
  });
}

// With more ranks than CPUs collectives stage, but for broadcasts of 2 MiB or
// more where the group prefers single copies (direct_ops.h): 3 ranks here,
// which on a machine with fewer than 3 CPUs shows both rules.
TEST(CmaOversubscribed, LargeBroadcastsReadWithCmaWhateverTheCpuCount) {
  const bool cpu_each = 3u <= std::max(1u, std::thread::hardware_concurrency());
  RunOptions o;
  o.call_init = false;
  o.env = {{"COLLIE_COPY_PATH", "single"}, {"COLLIE_DEBUG", "detail"}};  // (check_path)
  run_ranks(
      3,
      [&](int rank) {
        init();
        create_group("broadcast2m", {0, 1, 2});
        check_path(
            rank, 3, (2 << 20) / 4, "broadcast",
            [](const Tensor& x) { broadcast(x, 2, "broadcast2m"); }, cma_works_here());
        create_group("broadcast1m", {0, 1, 2});
        check_path(
            rank, 3, (1 << 20) / 4, "broadcast",
            [](const Tensor& x) { broadcast(x, 2, "broadcast1m"); }, cma_works_here() && cpu_each);
        release();
      },
      o);
}

// Hybrid groups with more ranks than CPUs read all_reduce and all_gather of 2
// MiB per rank or more with CMA, reduce from 2 MiB (3 ranks: their slices are
// then more than 256 KiB), gather and scatter from 512 KiB (direct_ops.h), and
// stage smaller calls; with a CPU each they read
// all_reduce, all_gather, gather and scatter from 128 KiB (copy_path.h), reduce
// from 2 MiB. 3 ranks: on fewer than 3 CPUs both rules show. Every element is
// checked, and the bytes this rank moved through CMA show the path (gather's
// and scatter's root, at rank 1, moves none: the others write into it or read
// from it).
TEST(CmaOversubscribed, HybridGroupsReadLargeReductionsAndGathersWithCma) {
  const bool cpu_each = 3u <= std::max(1u, std::thread::hardware_concurrency());
  RunOptions o;
  o.call_init = false;
  o.env = {{"COLLIE_COPY_PATH", "hybrid"}};
  run_ranks(
      3,
      [&](int rank) {
        init();
        const std::vector<int> members = {0, 1, 2};
        struct Case {
          const char* op;
          int64_t bytes;  // per rank
          bool cma;
        };
        const bool cma = cma_works_here();
        const Case cases[] = {{"all_reduce", (2 << 20) + 12, cma},
                              {"all_reduce", 1 << 20, cma && cpu_each},
                              {"reduce", (2 << 20) + 4, cma},
                              {"reduce", (2 << 20) - 4, false},
                              {"reduce", 512 << 10, false},
                              {"all_gather", 2 << 20, cma},
                              {"all_gather", (1 << 20) + 8, cma && cpu_each},
                              {"gather", (512 << 10) + 4, cma},
                              {"gather", (256 << 10) + 4, cma && cpu_each},
                              {"scatter", (512 << 10) + 4, cma},
                              {"scatter", (256 << 10) + 4, cma && cpu_each}};
        auto moved = [] {
          return collie::detail::cma_bytes_read() + collie::detail::cma_bytes_written();
        };
        for (const Case& c : cases) {
          const int64_t count = c.bytes / 4;
          const std::string op = c.op;
          const std::string what = op + " of " + std::to_string(c.bytes) + " bytes";
          const uint64_t before = moved();
          if (op == "gather") {
            Tensor x = make_tensor({count}, DType::Float32, [&](int64_t i) {
              return pattern_value(DType::Float32, rank, i);
            });
            Tensor y = gather_into_tensor(x, 1);
            if (rank == 1) {
              check_tensor(
                  y, DType::Float32, {3 * count},
                  [&](int64_t i) { return pattern_value(DType::Float32, i / count, i % count); },
                  what);
            }
          } else if (op == "scatter") {
            Tensor x = make_tensor({3 * count}, DType::Float32, [&](int64_t i) {
              return pattern_value(DType::Float32, rank, i);
            });
            check_tensor(
                scatter_tensor(x, 1), DType::Float32, {count},
                [&](int64_t i) { return pattern_value(DType::Float32, 1, rank * count + i); },
                what);
          } else if (op == "all_gather") {
            Tensor x = make_tensor({count}, DType::Float32, [&](int64_t i) {
              return pattern_value(DType::Float32, rank, i);
            });
            Tensor y = all_gather_into_tensor(x).first;
            check_tensor(
                y, DType::Float32, {3 * count},
                [&](int64_t i) { return pattern_value(DType::Float32, i / count, i % count); },
                what);
          } else {
            Tensor x = make_tensor({count}, DType::Float32, [&](int64_t i) {
              return rank_value(DType::Float32, ReduceOp::SUM, rank, i);
            });
            auto expected = [&](int64_t i) {
              return expected_reduction(DType::Float32, ReduceOp::SUM, members, i);
            };
            if (std::string(c.op) == "all_reduce") {
              check_tensor(all_reduce(x).first, DType::Float32, {count}, expected, what);
            } else {
              Tensor y = reduce(x, 1);
              if (rank == 1) check_tensor(y, DType::Float32, {count}, expected, what);
            }
          }
          const bool root_of_rooted = (op == "gather" || op == "scatter") && rank == 1;
          RCHECK_EQ(moved() > before, c.cma && !root_of_rooted) << what << ", rank " << rank;
        }
        release();
      },
      o);
}

// Runs body(rank, over) on kHybridRanks ranks of a hybrid group twice: counting
// 2 CPUs (over: more ranks than CPUs), then a CPU a rank.
constexpr int kHybridRanks = 6;
void run_hybrid_ranks_both_ways(const std::function<void(int rank, bool over)>& body) {
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "hybrid"}};
  for (unsigned cpus : {2u, static_cast<unsigned>(kHybridRanks)}) {
    AssumedCpus assumed(cpus);
    const bool over = collie::detail::more_ranks_than_cpus(kHybridRanks);
    run_ranks(
        kHybridRanks, [&](int rank) { body(rank, over); }, o);
  }
}

std::string cpus_counted(bool over) { return over ? "2 CPUs" : "a CPU a rank"; }

// A hybrid group with more ranks than CPUs scatters with CMA, to any number of
// readers, once its staged path would take two whole steps (a rank's piece of
// twice the slot's share, 1 MiB / n, or more), and stages shorter calls
// (direct_ops.h, beside kCmaRootedOversubscribedHybridMinBytes). With a CPU
// each, 5 readers of one root stage below 2 MiB of its input on any pages.
// Every rank's piece is checked, and the bytes each non-root read show the
// path (the root reads none).
TEST(CmaOversubscribed, HybridGroupsScatterToManyRanksWithCmaFromTwoStagedSteps) {
  constexpr int64_t kStepBytes = (1 << 20) / kHybridRanks / 64 * 64;  // ShmGroup::piece_bytes
  run_hybrid_ranks_both_ways([&](int rank, bool over) {
    const DType dt = DType::Float32;
    const int root = 4;
    struct Case {
      int64_t bytes;  // per rank
      bool cma;
    };
    const bool cma = cma_works_here() && over;
    // The root's inputs stay below 2 MiB, read from huge pages alike.
    const Case cases[] = {
        {kStepBytes + 4, false}, {2 * kStepBytes - 4, false}, {2 * kStepBytes, cma}};
    for (const Case& c : cases) {
      const int64_t count = c.bytes / 4;
      const std::string what =
          "scatter of " + std::to_string(c.bytes) + " bytes a rank, " + cpus_counted(over);
      Tensor x = make_tensor({count * kHybridRanks}, dt,
                             [&](int64_t i) { return pattern_value(dt, rank, i); });
      const uint64_t before = collie::detail::cma_bytes_read();
      check_tensor(
          scatter_tensor(x, root), dt, {count},
          [&](int64_t i) { return pattern_value(dt, root, rank * count + i); }, what);
      const uint64_t expected = c.cma && rank != root ? static_cast<uint64_t>(c.bytes) : 0;
      RCHECK_EQ(collie::detail::cma_bytes_read() - before, expected) << what << ", rank " << rank;
    }
  });
}

// A gather with more non-roots than kCmaMaxReadersOfOneProcess: where every
// rank has a CPU the root reads their pieces in turn; with more ranks than
// CPUs each non-root writes its own into the root's output (direct_ops.cc,
// DirectGather). 512 KiB and a float per rank (CMA either way); the bytes each
// rank read and wrote show who moved them.
TEST(CmaOversubscribed, ManyNonRootsWriteTheirGatherPiecesIntoTheRootWhenOversubscribed) {
  run_hybrid_ranks_both_ways([&](int rank, bool over) {
    const DType dt = DType::Float32;
    const int root = 1;
    const int64_t count = (512 << 10) / 4 + 1;
    const uint64_t bytes = static_cast<uint64_t>(count) * 4;
    Tensor x = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
    const uint64_t read = collie::detail::cma_bytes_read();
    const uint64_t written = collie::detail::cma_bytes_written();
    Tensor y = gather_into_tensor(x, root);
    const std::string what = "gather, " + cpus_counted(over) + ", rank " + std::to_string(rank);
    if (rank == root) {
      check_tensor(
          y, DType::Float32, {kHybridRanks * count},
          [&](int64_t i) { return pattern_value(dt, i / count, i % count); }, what);
    }
    uint64_t expect_read = 0, expect_written = 0;
    if (cma_works_here() && over && rank != root) expect_written = bytes;
    if (cma_works_here() && !over && rank == root) expect_read = (kHybridRanks - 1) * bytes;
    RCHECK_EQ(collie::detail::cma_bytes_read() - read, expect_read) << what;
    RCHECK_EQ(collie::detail::cma_bytes_written() - written, expect_written) << what;
  });
}

// With more ranks than CPUs an all_to_all reads the pieces the slots would
// take two whole steps for with CMA (twice a pair's share of the 1 MiB slot,
// all_to_all_piece_bytes; 512 KiB at most: all_to_all_op.cc's header) and
// stages smaller ones. 6 ranks counting 2 CPUs, even splits on both sides of
// the threshold; every element is checked, and each rank's CMA reads show the
// path (each peer's piece read once, or none).
TEST(CmaOversubscribed, AllToAllPullsPiecesFromTwoStagedSteps) {
  constexpr int kRanks = 6;
  AssumedCpus assumed(2);
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "hybrid"}};
  run_ranks(
      kRanks,
      [&](int rank) {
        const DType dt = DType::Float32;
        const size_t share = collie::detail::all_to_all_piece_bytes(1 << 20, kRanks);
        ASSERT_LT(2 * share, size_t{512} << 10);
        for (const size_t bytes : {2 * share - 4, 2 * share}) {
          const bool pulled = cma_works_here() && bytes >= 2 * share;
          const int64_t piece = static_cast<int64_t>(bytes / 4);
          const std::string what = "all_to_all of " + std::to_string(bytes) +
                                   "-byte pieces, rank " + std::to_string(rank);
          // Element k of the piece from i to j holds pattern_value(dt, 8 * i + j, k).
          Tensor x = make_tensor({kRanks * piece}, dt, [&](int64_t k) {
            return pattern_value(dt, 8 * rank + static_cast<int>(k / piece), k % piece);
          });
          const uint64_t before = collie::detail::cma_bytes_read();
          Tensor y = all_to_all_single_with_output_shape({kRanks * piece}, x).first;
          check_tensor(
              y, dt, {kRanks * piece},
              [&](int64_t k) {
                return pattern_value(dt, 8 * static_cast<int>(k / piece) + rank, k % piece);
              },
              what);
          const uint64_t expected = pulled ? (kRanks - 1) * static_cast<uint64_t>(bytes) : 0;
          RCHECK_EQ(collie::detail::cma_bytes_read() - before, expected) << what;
        }
      },
      o);
}

// From 16 KiB per rank (all_gather 8 KiB) where the group prefers single
// copies, from 64 KiB elsewhere (direct_ops.h), from 128 KiB where a member is
// hybrid (copy_path.h). Below 16 KiB a shared tensor takes the path a private
// one does, so there a dtype mismatch shows it.
TEST_P(CmaCopyPath, MidSizedCallsReadWithCmaFromLowerWhereEveryRankPrefersSingleCopies) {
  const std::string setting = GetParam();
  const bool single = cma_works_here() && setting == "single";
  const bool at_128k = cma_works_here();  // every setting's range holds 128 KiB
  const bool from_64k = cma_works_here() && setting != "hybrid";
  run_with_copy_path(setting, [&](int rank) {
    create_group("at128k", {0, 1, 2});
    check_path(
        rank, 3, (128 << 10) / 4, "all_gather_into_tensor",
        [](const Tensor& x) { all_gather_into_tensor(x, "at128k"); }, at_128k);
    create_group("at64k", {0, 1, 2});
    check_path(
        rank, 3, (64 << 10) / 4, "broadcast", [](const Tensor& x) { broadcast(x, 0, "at64k"); },
        from_64k);
    create_group("at16k", {0, 1, 2});
    check_path(
        rank, 3, (16 << 10) / 4, "broadcast", [](const Tensor& x) { broadcast(x, 0, "at16k"); },
        single);
    create_group("gather16k", {0, 1, 2});
    check_path(
        rank, 3, (16 << 10) / 4, "all_gather_into_tensor",
        [](const Tensor& x) { all_gather_into_tensor(x, "gather16k"); }, single);
    // all_gather from 8 KiB there; broadcast still stages at 8 KiB, everything at 4.
    struct Case {
      int64_t bytes;
      bool all_gather;  // else broadcast from group rank 0
      bool cma;
    };
    const Case cases[] = {{8 << 10, true, single}, {8 << 10, false, false}, {4 << 10, true, false}};
    int made = 0;
    for (const Case& c : cases) {
      const std::string group = "small" + std::to_string(made++);
      create_group(group, {0, 1, 2});
      if (c.all_gather) {
        check_path_against_int32(
            rank, 3, c.bytes / 4, "all_gather_into_tensor",
            [&](const Tensor& x) { all_gather_into_tensor(x, group); }, c.cma);
      } else {
        check_path_against_int32(
            rank, 3, c.bytes / 4, "broadcast", [&](const Tensor& x) { broadcast(x, 0, group); },
            c.cma);
      }
    }
  });
}

// The reductions take CMA only where the group prefers single copies, and then
// only in their ranges (direct_ops.h): all_reduce from 128 KiB to below 64
// MiB, reduce from 32 KiB up (from 2 MiB where a member is hybrid,
// copy_path.h). Each call fails its group, so each gets a new one.
TEST_P(CmaCopyPath, ReductionsUseCmaOnlyWhereEveryRankPrefersSingleCopies) {
  const std::string setting = GetParam();
  const bool large = cma_works_here() && setting != "staged";
  const bool single = cma_works_here() && setting == "single";
  run_with_copy_path(setting, [&](int rank) {
    struct Case {
      int64_t bytes;
      bool all_reduce;  // else reduce to group rank 2
      bool cma;
    };
    // all_reduce from 128 KiB to below 64 MiB per rank, reduce from 32 KiB up
    // (hybrid: 2 MiB).
    const Case cases[] = {
        {1 << 20, true, large},  {64 << 10, true, false},         {17 << 20, true, large},
        {64 << 20, true, false}, {32 << 10, false, single},       {(32 << 10) - 64, false, false},
        {2 << 20, false, large}, {(2 << 20) - 64, false, single}, {(64 << 20) + 64, false, large}};
    int made = 0;
    for (const Case& c : cases) {
      const std::string group = "case" + std::to_string(made++);
      create_group(group, {0, 1, 2});
      if (c.all_reduce) {
        check_path(
            rank, 3, c.bytes / 4, "all_reduce(sum)",
            [&](const Tensor& x) { all_reduce(x, ReduceOp::SUM, group); }, c.cma);
      } else {
        check_path(
            rank, 3, c.bytes / 4, "reduce(sum)",
            [&](const Tensor& x) { reduce(x, 2, ReduceOp::SUM, group); }, c.cma);
      }
    }
  });
}

// A CMA reduce at 2 ranks gives the root 3/5 of the elements, since its peer
// also writes its reduced slice into the root's output (direct_ops.cc): each
// rank reads through CMA the peer's part of its own slice, so the bytes it read
// show the split. Either root, uneven counts in three element widths; every
// element checked.
TEST(CmaReduceSplit, TheRootReducesThreeFifthsAtTwoRanks) {
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "single"}, {"COLLIE_CMA", "always"}};
  run_ranks(
      2,
      [](int rank) {
        const bool cma = cma_works_here();  // else every call stages and reads nothing
        for (DType dt : {DType::Float32, DType::Int8, DType::Float64}) {
          const int64_t es = static_cast<int64_t>(element_size(dt));
          for (int64_t count : {(64 << 10) / es + 7, (1 << 20) / es + 3}) {
            for (int root : {0, 1}) {
              const std::string what = "reduce of " + std::to_string(count) + " " +
                                       std::string(dtype_name(dt)) + " to " + std::to_string(root);
              Tensor x = make_tensor(
                  {count}, dt, [&](int64_t i) { return rank_value(dt, ReduceOp::SUM, rank, i); });
              const uint64_t before = collie::detail::cma_bytes_read();
              Tensor y = reduce(x, root, ReduceOp::SUM);
              const double read = static_cast<double>(collie::detail::cma_bytes_read() - before);
              if (rank == root) {
                check_tensor(
                    y, dt, {count},
                    [&](int64_t i) {
                      return expected_reduction(dt, ReduceOp::SUM, {0, 1}, i);
                    },
                    what);
              }
              const double share = !cma ? 0.0 : rank == root ? 0.6 : 0.4;
              const double bytes = static_cast<double>(count * es);
              // Slice boundaries are rounded to 64 bytes.
              RCHECK(read >= share * bytes - 64 && read <= share * bytes + 64)
                  << what << ": rank " << rank << " read " << read << " of " << bytes << " bytes";
            }
          }
        }
      },
      o);
}

// Runs call() and checks the bytes this rank read from and wrote into its
// peers through CMA meanwhile: which path the call took.
void expect_cma_traffic(const std::string& what, uint64_t read, uint64_t written,
                        const std::function<void()>& call) {
  const uint64_t read_before = collie::detail::cma_bytes_read();
  const uint64_t written_before = collie::detail::cma_bytes_written();
  call();
  RCHECK_EQ(collie::detail::cma_bytes_read() - read_before, read) << what << ": bytes read";
  RCHECK_EQ(collie::detail::cma_bytes_written() - written_before, written)
      << what << ": bytes written";
}

// gather_into_tensor with CMA: each non-root writes its piece into the root's
// output (process_vm_writev) while the root copies its own, when there are at
// most 3 non-roots or more ranks than CPUs; otherwise the root reads every
// piece in turn (direct_ops.h). The bytes each rank wrote and read through CMA
// show which, for either root; every element is checked on the root.
// COLLIE_CMA=always: 5 ranks on fewer CPUs would stage; collie counts a CPU a
// rank (AssumedCpus), so 5 ranks show the root's reads on any machine.
class CmaGather : public ::testing::TestWithParam<int> {};

TEST_P(CmaGather, NonRootsWriteTheirPiecesWhenFewAndTheRootReadsThemOtherwise) {
  const int n = GetParam();
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "single"}, {"COLLIE_CMA", "always"}};
  AssumedCpus assumed(static_cast<unsigned>(n));
  run_ranks(
      n,
      [n](int rank) {
        const bool cma = cma_works_here();
        const bool pushed = n - 1 <= 3;
        const DType dt = DType::Float32;
        const int64_t count = (1 << 20) / 4 + 5;  // uneven: pieces end mid-line
        const uint64_t bytes = static_cast<uint64_t>(count) * 4;
        for (int root : {0, n - 1}) {
          const std::string what = "gather to " + std::to_string(root) + ", " + std::to_string(n) +
                                   " ranks, rank " + std::to_string(rank);
          Tensor x =
              make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          const uint64_t expect_written = cma && pushed && rank != root ? bytes : 0;
          const uint64_t expect_read =
              cma && !pushed && rank == root ? bytes * static_cast<uint64_t>(n - 1) : 0;
          Tensor y;
          expect_cma_traffic(what, expect_read, expect_written,
                             [&] { y = gather_into_tensor(x, root); });
          if (rank == root) {
            check_tensor(
                y, dt, {n * count},
                [&](int64_t i) {
                  return pattern_value(dt, static_cast<int>(i / count), i % count);
                },
                what);
          }
        }
      },
      o);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CmaGather, ::testing::Values(2, 3, 5), world_size_name);

// all_gather_into_tensor with CMA: each rank writes an input of less than 2
// MiB into its peers' outputs (process_vm_writev), when it has at most 3
// peers; a larger one, or with more peers, each rank reads from its owner
// (direct_ops.cc). The bytes each rank wrote and read through CMA show which;
// every element is checked on every rank.
class CmaAllGather : public ::testing::TestWithParam<int> {};

TEST_P(CmaAllGather, InputsBelowTwoMiBAreWrittenByTheirOwnersWhenPeersAreFew) {
  const int n = GetParam();
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "single"}, {"COLLIE_CMA", "always"}};
  run_ranks(
      n,
      [n](int rank) {
        const bool cma = cma_works_here();
        const DType dt = DType::Float32;
        const uint64_t peers = static_cast<uint64_t>(n - 1);
        for (int64_t count : {(1 << 20) / 4 + 3, (2 << 20) / 4 + 3}) {
          const uint64_t bytes = static_cast<uint64_t>(count) * 4;
          const bool pushed = bytes < (2u << 20) && n - 1 <= 3;
          const std::string what = "all_gather of " + std::to_string(bytes) + " bytes, " +
                                   std::to_string(n) + " ranks, rank " + std::to_string(rank);
          Tensor x =
              make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y;
          expect_cma_traffic(what, cma && !pushed ? peers * bytes : 0,
                             cma && pushed ? peers * bytes : 0,
                             [&] { y = all_gather_into_tensor(x).first; });
          check_tensor(
              y, dt, {n * count},
              [&](int64_t i) { return pattern_value(dt, static_cast<int>(i / count), i % count); },
              what);
        }
      },
      o);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CmaAllGather, ::testing::Values(2, 5), world_size_name);

// COLLIE_ALLREDUCE_ALGO=oneshot|twoshot forces a staged all_reduce, on private
// tensors too: no CMA even where the group prefers single copies.
TEST(CmaCopyPathForcedAlgo, ForcedAllReduceAlgorithmStages) {
  RunOptions o;
  o.call_init = false;
  o.env = {{"COLLIE_COPY_PATH", "single"}, {"COLLIE_ALLREDUCE_ALGO", "twoshot"}};
  run_ranks(
      2,
      [](int rank) {
        init();
        check_path(
            rank, 2, (1 << 20) / 4, "all_reduce(sum)", [](const Tensor& x) { all_reduce(x); },
            false);
        release();
      },
      o);
}

// Where the group stages (COLLIE_COPY_PATH=staged), all_to_all pieces of 512
// KiB or more are read with CMA only from a sender whose input lies on huge
// pages, as its step-0 header tells the receiver. Rank 0's input (4 MiB) asks for
// huge pages (collie's tensors of 2 MiB or more do, unless COLLIE_HUGE_PAGES=0),
// rank 1's (900 KiB) does not: one call then reads one piece with CMA and stages
// the other, and both ends must agree on which. The list form then passes a
// tensor per piece: rank 0's 3 MiB one asks for huge pages on its own. Every
// element is checked on both ranks, with huge pages allowed and not.
class CmaStagedAllToAll : public ::testing::TestWithParam<std::string> {};

TEST_P(CmaStagedAllToAll, LargePiecesFromInputsOnEitherPageSize) {
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "staged"}, {"COLLIE_HUGE_PAGES", GetParam()}};
  run_ranks(
      2,
      [](int rank) {
        const DType dt = DType::Float32;
        // Elements rank i sends to rank j.
        const int64_t counts[2][2] = {{(1 << 20) / 4 + 5, (3 << 20) / 4 + 3},
                                      {(700 << 10) / 4 + 1, (200 << 10) / 4}};
        const int other = 1 - rank;
        std::vector<int64_t> send = {counts[rank][0], counts[rank][1]};
        std::vector<int64_t> recv = {counts[0][rank], counts[1][rank]};
        // Element k of the piece from i to j holds pattern_value(dt, 16 * i + j, k).
        Tensor x = make_tensor({send[0] + send[1]}, dt, [&](int64_t k) {
          const int to = k < send[0] ? 0 : 1;
          return pattern_value(dt, 16 * rank + to, to == 0 ? k : k - send[0]);
        });
        auto [y, h] = all_to_all_single_with_output_shape({recv[0] + recv[1]}, x, recv, send);
        check_tensor(
            y, dt, {recv[0] + recv[1]},
            [&](int64_t k) {
              const int from = k < recv[0] ? 0 : 1;
              return pattern_value(dt, 16 * from + rank, from == 0 ? k : k - recv[0]);
            },
            "all_to_all, rank " + std::to_string(rank) + " from rank " + std::to_string(other));
        // The list form on a tensor per piece (rank 0's 3 MiB piece on huge pages
        // of its own, where allowed): the header says so for the pieces apart too.
        std::vector<Tensor> pieces;
        for (int to = 0; to < 2; ++to) {
          pieces.push_back(make_tensor({send[static_cast<size_t>(to)]}, dt, [&](int64_t k) {
            return pattern_value(dt, 16 * rank + to, k);
          }));
        }
        auto [ys, hs] = all_to_all_with_output_shape({{recv[0]}, {recv[1]}}, pieces);
        for (int from = 0; from < 2; ++from) {
          check_tensor(
              ys[static_cast<size_t>(from)], dt, {recv[static_cast<size_t>(from)]},
              [&](int64_t k) { return pattern_value(dt, 16 * from + rank, k); },
              "all_to_all list form, rank " + std::to_string(rank) + " from rank " +
                  std::to_string(from));
        }
      },
      o);
}

// The early-rank tests' options: 1 MiB pieces and inputs move with CMA on any
// machine, whatever its CPU count.
RunOptions cma_at_every_size() {
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "single"}, {"COLLIE_CMA", "always"}};
  return o;
}

// Runs `call` (which starts a collective asynchronously on 3 ranks and returns
// its handle) with rank 2 late: ranks 0 and 1 start it, then wait, with a
// deadline, until `moved` (a byte counter: cma_bytes_read or _written) shows
// `early_bytes` more, and only then meet rank 2 at a barrier of group
// "late_side", after which rank 2 starts it. Every rank then waits for it.
void call_with_rank_two_late(int rank, const std::function<CommHandle()>& call, uint64_t (*moved)(),
                             uint64_t early_bytes, const std::string& what) {
  const uint64_t before = moved();
  if (rank == 2) {
    barrier("late_side");
    call().wait();
    return;
  }
  CommHandle handle = call();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (moved() - before < early_bytes) {
    RCHECK(std::chrono::steady_clock::now() < deadline)
        << what << ": rank " << rank << " moved " << moved() - before << " of the " << early_bytes
        << " bytes it shares with its early peer in 20 s while rank 2 had not called";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  barrier("late_side");
  handle.wait();
}

// all_to_all and all_gather move data between two ranks as soon as both have
// come, not once every rank has (StepOp::consume_as_ranks_arrive): on 3 ranks,
// ranks 0 and 1 read or write each other's piece with CMA while rank 2 has not
// called yet (call_with_rank_two_late). Each piece then crosses once in all
// (the byte counters show no second copy), and every element arrives on every
// rank: all_to_all's 1 MiB pieces, all_gather's 3 MiB inputs (each rank reads
// them) and 1 MiB ones (each rank writes its own into every output). A second
// all_to_all, where rank 2 sends rank 0 fewer elements than rank 0 expects,
// still fails on every rank after ranks 0 and 1 read each other's pieces: the
// whole count matrix is checked once every rank has come. Without CMA (a
// system that forbids it) nothing moves early and the values are checked the
// same.
TEST(CmaEarlyRanks, PiecesMoveBetweenTheRanksThatCameWhileAnotherIsLate) {
  run_ranks(
      3,
      [](int rank) {
        const DType dt = DType::Float32;
        const bool cma = cma_works_here();
        create_group("late_side", {0, 1, 2});
        create_group("late_mismatch", {0, 1, 2});

        // all_to_all: element k of the piece from i to j holds pattern_value(dt, 4 * i + j, k).
        const int64_t piece = (1 << 20) / 4;
        const uint64_t piece_bytes = static_cast<uint64_t>(piece) * 4;
        Tensor x = make_tensor({3 * piece}, dt, [&](int64_t k) {
          return pattern_value(dt, 4 * rank + static_cast<int>(k / piece), k % piece);
        });
        Tensor y;
        uint64_t before = collie::detail::cma_bytes_read();
        call_with_rank_two_late(
            rank,
            [&] {
              auto [out, handle] = all_to_all_single_with_output_shape({3 * piece}, x, {}, {},
                                                                       WORLD, /*async_op=*/true);
              y = out;
              return handle;
            },
            collie::detail::cma_bytes_read, cma ? piece_bytes : 0, "all_to_all");
        RCHECK_EQ(collie::detail::cma_bytes_read() - before, cma ? 2 * piece_bytes : 0)
            << "all_to_all, rank " << rank << ": each peer's piece read once";
        check_tensor(
            y, dt, {3 * piece},
            [&](int64_t k) {
              return pattern_value(dt, 4 * static_cast<int>(k / piece) + rank, k % piece);
            },
            "all_to_all, rank " + std::to_string(rank));

        // all_gather: rank i's input holds pattern_value(dt, 20 + i, k); read
        // from 2 MiB per rank, written below.
        for (const int64_t count : {int64_t{3 << 20} / 4, int64_t{1 << 20} / 4}) {
          const uint64_t bytes = static_cast<uint64_t>(count) * 4;
          const bool read = bytes >= (2u << 20);
          uint64_t (*moved)() =
              read ? collie::detail::cma_bytes_read : collie::detail::cma_bytes_written;
          const std::string what =
              "all_gather of " + std::to_string(bytes) + " bytes, rank " + std::to_string(rank);
          Tensor in =
              make_tensor({count}, dt, [&](int64_t k) { return pattern_value(dt, 20 + rank, k); });
          Tensor gathered;
          before = moved();
          call_with_rank_two_late(
              rank,
              [&] {
                auto [out, handle] = all_gather_into_tensor(in, WORLD, /*async_op=*/true);
                gathered = out;
                return handle;
              },
              moved, cma ? bytes : 0, what);
          RCHECK_EQ(moved() - before, cma ? 2 * bytes : 0) << what << ": each piece moved once";
          check_tensor(
              gathered, dt, {3 * count},
              [&](int64_t k) {
                return pattern_value(dt, 20 + static_cast<int>(k / count), k % count);
              },
              what);
        }

        // Rank 2 sends rank 0 one element fewer than rank 0 expects.
        std::vector<int64_t> send = {piece, piece, piece}, recv = {piece, piece, piece};
        if (rank == 2) send[0] = piece - 1;
        Tensor z = Tensor::zeros({send[0] + send[1] + send[2]}, dt);
        const int64_t received = recv[0] + recv[1] + recv[2];
        try {
          call_with_rank_two_late(
              rank,
              [&] {
                return all_to_all_single_with_output_shape({received}, z, recv, send,
                                                           "late_mismatch", /*async_op=*/true)
                    .second;
              },
              collie::detail::cma_bytes_read, cma ? piece_bytes : 0, "mismatched all_to_all");
          RCHECK(false) << "rank " << rank << ": a count mismatch after early reads did not fail";
        } catch (const CommError& e) {
          RCHECK(contains(e.what(), "send and receive sizes disagree") &&
                 contains(e.what(), "rank 2 sends " + std::to_string(piece - 1) +
                                        " elements to rank 0, which expects " +
                                        std::to_string(piece)))
              << "rank " << rank << ": " << e.what();
        }
      },
      cma_at_every_size());
}

// A move tried as a rank came that fails is left for later, not reported: on 3
// ranks, rank 2 starts an all_to_all and then makes its piece for rank 1
// unreadable (mprotect), rank 1 starts it after that and, while rank 0 is
// held back for 200 ms, tries to read that piece early (process_vm_readv
// fails: EFAULT); rank 0 then calls it with int32 where the others pass
// float32. Every rank must fail with the mismatch, naming each rank's call,
// rank 1 included, not with the failed read.
TEST(CmaEarlyRanks, AFailedEarlyReadLeavesTheCallToFailWithItsCause) {
  run_ranks(
      3,
      [](int rank) {
        create_group("early_a", {1, 2});
        create_group("early_b", {0, 1});
        const int64_t piece = (1 << 20) / 4;  // elements; 1 MiB, whole pages
        const size_t piece_bytes = static_cast<size_t>(piece) * 4;
        AdvisedMapping region(3 * piece_bytes, MADV_NOHUGEPAGE);
        const DType dt = rank == 0 ? DType::Int32 : DType::Float32;
        Tensor x = Tensor::from_blob(region.data(), {3 * piece}, dt);
        x.copy_from(Tensor::ones({3 * piece}, dt));
        uint8_t* for_rank_one = region.data() + piece_bytes;
        try {
          if (rank == 2) {
            CommHandle h = all_to_all_single_with_output_shape({3 * piece}, x, {}, {}, WORLD,
                                                               /*async_op=*/true)
                               .second;
            RCHECK_EQ(mprotect(for_rank_one, piece_bytes, PROT_NONE), 0) << std::strerror(errno);
            barrier("early_a");
            h.wait();
          } else if (rank == 1) {
            barrier("early_a");
            CommHandle h = all_to_all_single_with_output_shape({3 * piece}, x, {}, {}, WORLD,
                                                               /*async_op=*/true)
                               .second;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            barrier("early_b");
            h.wait();
          } else {
            barrier("early_b");
            all_to_all_single_with_output_shape({3 * piece}, x);
          }
          RCHECK(false) << "rank " << rank << ": int32 against float32 did not fail";
        } catch (const CommError& e) {
          const std::string m = e.what();
          RCHECK(contains(m, "different operations") &&
                 contains(part_of_rank(m, 0), "all_to_all int32") &&
                 contains(part_of_rank(m, 1), "all_to_all float32") &&
                 contains(part_of_rank(m, 2), "all_to_all float32"))
              << "rank " << rank << ": " << m;
        }
        if (rank == 2) RCHECK_EQ(mprotect(for_rank_one, piece_bytes, PROT_READ | PROT_WRITE), 0);
      },
      cma_at_every_size());
}

// A rank returns from all_to_all once it has read its pieces and its own
// pieces have been read, not once every rank has read everything (StepControl
// ::transfers_done): on 3 ranks, rank 0 makes its piece for rank 1 unreadable
// (mprotect) after its call began, so rank 1 reads rank 2's piece and then
// fails on rank 0's. Rank 2, whose pieces ranks 0 and 1 both read, must return
// every value; before, it waited for rank 1 to finish and timed out with rank
// 0. Rank 1 fails naming its read from rank 0, rank 0 times out waiting for
// rank 1 (the call's group has a deadline of 3 s), which meanwhile waits for
// it at a barrier of another group.
TEST(CmaEarlyRanks, ARankReturnsOnceItsOwnPiecesAreRead) {
  run_ranks(
      3,
      [](int rank) {
        create_group("done_a", {0, 1});
        create_group("done_b", {0, 1});
        GroupOptions three_seconds;
        three_seconds.timeout_seconds = 3;
        create_group("done_x", {0, 1, 2}, three_seconds);
        const DType dt = DType::Float32;
        const int64_t piece = (1 << 20) / 4;  // elements; 1 MiB, whole pages
        const size_t piece_bytes = static_cast<size_t>(piece) * 4;
        AdvisedMapping region(3 * piece_bytes, MADV_NOHUGEPAGE);
        // Element k of the piece from i to j holds pattern_value(dt, 4 * i + j, k).
        Tensor x = Tensor::from_blob(region.data(), {3 * piece}, dt);
        x.copy_from(make_tensor({3 * piece}, dt, [&](int64_t k) {
          return pattern_value(dt, 4 * rank + static_cast<int>(k / piece), k % piece);
        }));
        uint8_t* for_rank_one = region.data() + piece_bytes;
        if (rank == 2) {
          Tensor y = all_to_all_single_with_output_shape({3 * piece}, x, {}, {}, "done_x").first;
          check_tensor(
              y, dt, {3 * piece},
              [&](int64_t k) {
                return pattern_value(dt, 4 * static_cast<int>(k / piece) + rank, k % piece);
              },
              "all_to_all, rank 2");
          return;
        }
        try {
          if (rank == 0) {
            CommHandle h = all_to_all_single_with_output_shape({3 * piece}, x, {}, {}, "done_x",
                                                               /*async_op=*/true)
                               .second;
            RCHECK_EQ(mprotect(for_rank_one, piece_bytes, PROT_NONE), 0) << std::strerror(errno);
            barrier("done_a");
            h.wait();
          } else {
            barrier("done_a");
            all_to_all_single_with_output_shape({3 * piece}, x, {}, {}, "done_x");
          }
          RCHECK(false) << "rank " << rank << ": all_to_all did not fail";
        } catch (const CommError& e) {
          RCHECK(rank == 1 && contains(e.what(), "from rank 0") &&
                 contains(e.what(), "process_vm_readv"))
              << "rank " << rank << ": " << e.what();
        } catch (const TimeoutError& e) {
          RCHECK(rank == 0 && contains(e.what(), "waiting for rank(s) [1]"))
              << "rank " << rank << ": " << e.what();
        }
        // Rank 1 stays until rank 0 has given up on it (had it exited, rank 0
        // could have found it dead while still reading its piece).
        barrier("done_b");
        if (rank == 0) RCHECK_EQ(mprotect(for_rank_one, piece_bytes, PROT_READ | PROT_WRITE), 0);
      },
      cma_at_every_size());
}

// The single-copy all_gather's ranks return the same way: once every peer has
// read their input (from 2 MiB per rank each rank reads every other's), not
// once every rank has read everything. On 3 ranks, ranks 0 and 2 call first
// and read each other's input while rank 1 has not called (each waits for its
// byte counter, with a deadline); rank 0 then makes its input unreadable
// (mprotect) and lets rank 1 call, which reads rank 2's input (the next rank's
// first) and fails on rank 0's. Rank 2, whose input both peers read, must
// return every value; before, it waited for rank 1 to finish and timed out
// with rank 0. Rank 1 fails naming its read from rank 0, rank 0 times out
// waiting for rank 1 (a deadline of 3 s), which waits for it at a barrier of
// another group.
TEST(CmaEarlyRanks, AnAllGatherRankReturnsOnceItsInputIsRead) {
  run_ranks(
      3,
      [](int rank) {
        create_group("gdone_a", {0, 1});
        create_group("gdone_b", {0, 1});
        create_group("gdone_c", {0, 2});
        GroupOptions three_seconds;
        three_seconds.timeout_seconds = 3;
        create_group("gdone_x", {0, 1, 2}, three_seconds);
        const DType dt = DType::Float32;
        const int64_t count = (3 << 20) / 4;  // elements; 3 MiB, whole pages
        const size_t bytes = static_cast<size_t>(count) * 4;
        AdvisedMapping region(bytes, MADV_NOHUGEPAGE);
        // Rank i's input holds pattern_value(dt, 30 + i, k).
        Tensor x = Tensor::from_blob(region.data(), {count}, dt);
        x.copy_from(
            make_tensor({count}, dt, [&](int64_t k) { return pattern_value(dt, 30 + rank, k); }));
        if (rank == 1) {
          try {
            barrier("gdone_a");
            all_gather_into_tensor(x, "gdone_x");
            RCHECK(false) << "rank 1: all_gather did not fail";
          } catch (const CommError& e) {
            RCHECK(contains(e.what(), "from rank 0") && contains(e.what(), "process_vm_readv"))
                << "rank 1: " << e.what();
          }
          // Rank 1 stays until rank 0 has given up on it (had it exited, rank
          // 0 could have found it dead instead).
          barrier("gdone_b");
          return;
        }
        const uint64_t before = collie::detail::cma_bytes_read();
        auto [gathered, handle] = all_gather_into_tensor(x, "gdone_x", /*async_op=*/true);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (collie::detail::cma_bytes_read() - before < bytes) {
          RCHECK(std::chrono::steady_clock::now() < deadline)
              << "rank " << rank << " did not read its early peer's input in 20 s";
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        barrier("gdone_c");  // ranks 0 and 2 have read each other's input
        if (rank == 2) {
          handle.wait();
          check_tensor(
              gathered, dt, {3 * count},
              [&](int64_t k) {
                return pattern_value(dt, 30 + static_cast<int>(k / count), k % count);
              },
              "all_gather, rank 2");
          return;
        }
        RCHECK_EQ(mprotect(region.data(), bytes, PROT_NONE), 0) << std::strerror(errno);
        barrier("gdone_a");
        try {
          handle.wait();
          RCHECK(false) << "rank 0: all_gather did not fail";
        } catch (const TimeoutError& e) {
          RCHECK(contains(e.what(), "waiting for rank(s) [1]")) << "rank 0: " << e.what();
        }
        barrier("gdone_b");
        RCHECK_EQ(mprotect(region.data(), bytes, PROT_READ | PROT_WRITE), 0);
      },
      cma_at_every_size());
}

// Broadcasts and scatters of more than kCmaMaxBytes per rank on a group that
// stages (cma_if_huge_pages.h): the non-root reads the root's input with CMA
// when it lies on huge pages and stages it otherwise, as the root answers for
// each call. Inputs alternate between memory that asks for huge pages and
// memory that refuses them, and roots alternate; every element is checked on
// both ranks, and the bytes the non-root read through CMA show which way each
// call went: all of its share when the root's input lay on huge pages (where
// the machine gives them), none otherwise.
TEST(CmaStagedRooted, NonRootsReadTheRootsInputOnlyFromHugePages) {
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", "staged"}};
  run_ranks(
      2,
      [](int rank) {
        const DType dt = DType::Float32;
        const int64_t count = (9 << 20) / 4 + 16;  // elements per rank: 9 MiB and a bit
        const size_t bytes = static_cast<size_t>(count) * 4;
        for (int root = 0; root < 2; ++root) {
          for (bool huge : {true, false}) {
            const std::string what = std::string(huge ? "huge" : "4 KiB") + " pages, root " +
                                     std::to_string(root) + ", rank " + std::to_string(rank);
            AdvisedMapping region(2 * bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
            // Fills the root's input (n elements of pattern `key`) and returns
            // the root's answer, which the non-root must follow.
            auto root_input = [&](int64_t n, int key, Tensor* input) {
              if (rank == root) {
                *input = Tensor::from_blob(region.data(), {n}, dt);
                input->copy_from(
                    make_tensor({n}, dt, [&](int64_t i) { return pattern_value(dt, key, i); }));
              } else {
                *input = Tensor::zeros({n}, dt);
              }
              const bool on_huge = rank == root && collie::detail::lies_on_huge_pages(
                                                       region.data(), static_cast<size_t>(n) * 4);
              const bool answer =
                  all_reduce(Tensor::full({1}, on_huge ? 1 : 0), ReduceOp::MAX).first.item(0) == 1;
              // With huge pages asked for, only a machine without transparent
              // huge pages (or a kernel that cannot tell) answers no.
              if (!huge) RCHECK(!answer) << what;
              return answer;
            };

            Tensor x;
            bool cma = root_input(count, 10 + root, &x);
            uint64_t before = collie::detail::cma_bytes_read();
            Tensor y = broadcast(x, root);
            RCHECK_EQ(collie::detail::cma_bytes_read() - before, rank != root && cma ? bytes : 0)
                << "broadcast, " << what;
            check_tensor(
                y, dt, {count}, [&](int64_t i) { return pattern_value(dt, 10 + root, i); },
                "broadcast, " + what);

            Tensor s;
            cma = root_input(2 * count, 20 + root, &s);
            before = collie::detail::cma_bytes_read();
            Tensor z = scatter_tensor(s, root);
            RCHECK_EQ(collie::detail::cma_bytes_read() - before, rank != root && cma ? bytes : 0)
                << "scatter, " << what;
            check_tensor(
                z, dt, {count},
                [&](int64_t i) { return pattern_value(dt, 20 + root, rank * count + i); },
                "scatter, " + what);
          }
        }
      },
      o);
}

// With more than 3 non-roots, broadcast and scatter read the root's input with
// CMA only where it lies on huge pages, from 2 MiB of it, and otherwise stage
// (direct_ops.h, "one process's pages"): at 5 ranks, calls of 64 KiB read
// nothing through CMA, and calls of 2 MiB and more read every non-root's share
// exactly when the root's input lay on huge pages (as the root says); at 4 ranks
// the 64 KiB calls still read with CMA. Both copy paths; every element is
// checked on every rank. COLLIE_CMA=always: 4 and 5 ranks on fewer CPUs would
// stage anyway.
class CmaManyReaders : public ::testing::TestWithParam<std::string> {};

TEST_P(CmaManyReaders, NonRootsReadTheRootsInputOnlyFromHugePagesOrWhenFew) {
  RunOptions o;
  o.env = {{"COLLIE_COPY_PATH", GetParam()}, {"COLLIE_CMA", "always"}};
  const DType dt = DType::Float32;
  for (int n : {4, 5}) {
    run_ranks(
        n,
        [n, dt](int rank) {
          // Reads through CMA by this rank during call(), checked against `expected`.
          auto reads = [&](const std::string& what, uint64_t expected,
                           const std::function<void()>& call) {
            const uint64_t before = collie::detail::cma_bytes_read();
            call();
            RCHECK_EQ(collie::detail::cma_bytes_read() - before, expected)
                << what << ", " << n << " ranks, rank " << rank;
          };
          const bool few = n <= 4;
          for (int root : {0, n - 1}) {
            const bool reader = rank != root;
            // 64 KiB: CMA on any pages only with few non-roots.
            const int64_t small = (64 << 10) / 4;
            const uint64_t small_share = reader && few && cma_works_here() ? 64u << 10 : 0;
            Tensor x =
                make_tensor({small}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
            reads("broadcast of 64 KiB", small_share, [&] {
              check_tensor(
                  broadcast(x, root), dt, {small},
                  [&](int64_t i) { return pattern_value(dt, root, i); }, "broadcast of 64 KiB");
            });
            Tensor xs =
                make_tensor({small * n}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
            reads("scatter of 64 KiB a rank", small_share, [&] {
              check_tensor(
                  scatter_tensor(xs, root), dt, {small},
                  [&](int64_t i) { return pattern_value(dt, root, rank * small + i); },
                  "scatter of 64 KiB a rank");
            });
            if (few) continue;
            // 2 MiB and more of root input: CMA where it lies on huge pages.
            const int64_t count = (2 << 20) / 4 + 16;  // broadcast; scatter: a rank's piece / 4
            const size_t bytes = static_cast<size_t>(count) * 4;
            for (bool huge : {true, false}) {
              const std::string what =
                  std::string(huge ? "huge" : "4 KiB") + " pages, root " + std::to_string(root);
              AdvisedMapping region(bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
              auto root_input = [&](int64_t elems, int key) {
                Tensor input = Tensor::zeros({elems}, dt);
                if (rank == root) {
                  input = Tensor::from_blob(region.data(), {elems}, dt);
                  input.copy_from(make_tensor(
                      {elems}, dt, [&](int64_t i) { return pattern_value(dt, key, i); }));
                }
                return input;
              };
              // The root's answer, which every rank must follow.
              auto root_on_huge = [&](const Tensor& input) {
                const bool mine =
                    rank == root && collie::detail::lies_on_huge_pages(
                                        input.data_ptr(), static_cast<size_t>(input.nbytes()));
                const bool answer =
                    all_reduce(Tensor::full({1}, mine ? 1 : 0), ReduceOp::MAX).first.item(0) == 1;
                if (!huge) RCHECK(!answer) << what;
                return answer && cma_works_here();
              };
              Tensor b = root_input(count, 30 + root);
              const bool b_cma = root_on_huge(b);
              reads("broadcast of 2 MiB, " + what, reader && b_cma ? bytes : 0, [&] {
                check_tensor(
                    broadcast(b, root), dt, {count},
                    [&](int64_t i) { return pattern_value(dt, 30 + root, i); },
                    "broadcast of 2 MiB, " + what);
              });
              // The whole region again: every rank's piece of count / n elements (and a rest).
              const int64_t piece = count / n;
              Tensor s = root_input(piece * n, 40 + root);
              const bool s_cma = root_on_huge(s);
              reads("scatter of 2 MiB, " + what,
                    reader && s_cma ? static_cast<uint64_t>(piece) * 4 : 0, [&] {
                      check_tensor(
                          scatter_tensor(s, root), dt, {piece},
                          [&](int64_t i) { return pattern_value(dt, 40 + root, rank * piece + i); },
                          "scatter of 2 MiB, " + what);
                    });
            }
          }
        },
        o);
  }
}

INSTANTIATE_TEST_SUITE_P(Settings, CmaManyReaders, ::testing::Values("single", "staged"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

INSTANTIATE_TEST_SUITE_P(HugePages, CmaStagedAllToAll, ::testing::Values("1", "0"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "1" ? std::string("huge_pages")
                                                    : std::string("small_pages");
                         });

INSTANTIATE_TEST_SUITE_P(Settings, CmaCopyPath, ::testing::Values("single", "hybrid", "staged"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace collie::testing
