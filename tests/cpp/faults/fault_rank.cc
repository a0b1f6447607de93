// fault_rank SCENARIO: one rank of a fault-injection scenario, run by fault_test.cc
// through the real launcher (`collie run -n N --timeout T -- fault_rank SCENARIO`),
// reporting through files in $COLLIE_FAULT_DIR (fault_protocol.h).
//
// Every rank blocks SIGTERM before init() (so every collie thread inherits the
// mask): when the launcher starts stopping the job because the victim died, the
// survivors still observe and report their own error instead of dying first.
// After reporting, a rank waits until every rank but the victim
// ($COLLIE_FAULT_VICTIM) has reported too, so no rank's exit changes what its
// peers observe. Survivors of an external kill then wait for that SIGTERM before
// exiting, so the launcher has surely seen the victim's death first and names it.
//
// Exit codes: 0 the operation succeeded (or the rank had nothing to do),
// 3 it raised CommError/TimeoutError (reported), 4 something else went wrong.
// release() is called in every case: a program that caught the error must be
// able to clean up without hanging.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>

#include "collie/collie.h"
#include "fault_protocol.h"

namespace {

using collie::faults::now_ns;
using collie::faults::rank_file;

std::string g_dir;
int g_rank = -1;
int64_t g_enter = 0;

// Written right before the operation under test.
void enter() {
  g_enter = now_ns();
  collie::faults::write_file_atomically(rank_file(g_dir, "ready", g_rank), "1\n");
}

void report(const std::string& cls, const std::string& message) {
  collie::faults::Result r{cls, g_enter, now_ns(), message};
  if (r.enter == 0) r.enter = r.end;
  collie::faults::write_file_atomically(rank_file(g_dir, "result", g_rank),
                                        collie::faults::format_result(r));
}

// Waits (bounded) for the test to create `go`.
void wait_for_go() {
  const std::string go = g_dir + "/go";
  for (int i = 0; i < 3000 && access(go.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Waits (bounded) for the launcher's SIGTERM, which is blocked.
void wait_for_sigterm(double seconds) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  timespec ts{static_cast<time_t>(seconds), 0};
  sigtimedwait(&set, nullptr, &ts);
}

// Waits (bounded) until every rank but the victim has written its result. A rank
// that exits is dead to its peers: leaving early would turn a peer's pending
// TimeoutError into a CommError and make the test depend on who finished first.
void wait_for_results(int n, int victim) {
  for (int r = 0; r < n; ++r) {
    if (r == victim || r == g_rank) continue;
    const std::string path = rank_file(g_dir, "result", r);
    for (int i = 0; i < 2000 && access(path.c_str(), F_OK) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

constexpr int64_t kBigElements = 16 << 20;  // 64 MiB of float32

// all_reduce calls of 64 MiB, eight of them: one took 40-45 ms on an idle 2-core
// machine (3 ranks), so a fault test whose run without a fault was slowed by a
// loaded machine and whose faulted runs were not missed it every time.
void big_all_reduce() {
  auto x = collie::Tensor::ones({kBigElements});
  collie::all_reduce(collie::Tensor::ones({16}));  // warm: the world is up
  enter();
  for (int i = 0; i < 8; ++i) collie::all_reduce(x);
}

// all_reduce calls that take the CMA path (COLLIE_COPY_PATH=single and
// COLLIE_CMA=always, set by the test), where peers read and write each other's
// tensors with process_vm_readv/writev: 4 MiB each, enough of them to last a few
// hundred milliseconds.
void cma_all_reduces() {
  auto x = collie::Tensor::ones({1 << 20});
  collie::all_reduce(collie::Tensor::ones({16}));
  enter();
  for (int i = 0; i < 200; ++i) collie::all_reduce(x);
}

// Broadcasts from rank 1, the rank the test kills, of 9 MiB (COLLIE_COPY_PATH=
// staged and COLLIE_CMA=always, set by the test): beyond the CMA range of a
// group that stages, so each starts with rank 1 telling the others whether its
// input lies on huge pages, then they read it with process_vm_readv or through
// the slots (cma_if_huge_pages.h). Enough of them to last a few hundred
// milliseconds.
void huge_page_broadcasts() {
  auto x = collie::Tensor::ones({(9 << 20) / 4});
  collie::all_reduce(collie::Tensor::ones({16}));
  enter();
  for (int i = 0; i < 100; ++i) collie::broadcast(x, 1);
}

// The rank the test will signal ($COLLIE_FAULT_VICTIM), -1 in runs without a fault.
int fault_victim() {
  const char* victim = std::getenv("COLLIE_FAULT_VICTIM");
  return victim != nullptr ? std::atoi(victim) : -1;
}

// Every rank sends 16 MiB to every other rank and receives as much from each.
// The victim starts its batch only on the test's go, which a faulted run never
// gives: the survivors' exchanges with it cannot finish (its 16 KiB ring holds a
// sliver of 16 MiB), so they need the victim until it dies, however the
// scheduler orders the transfers. (When the victim took part from the start, a
// survivor now and then completed its exchange with it before the fault landed
// and then, rightly, raised nothing.) Only the run without a fault moves it all:
// 64 MiB took it 17-27 s through those rings, for nothing the test needs.
constexpr int64_t kExchangeElements = 4 << 20;

void big_exchange(int rank, int n) {
  auto x = collie::Tensor::ones({kExchangeElements});
  collie::barrier();
  std::vector<collie::P2POp> ops;
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    ops.emplace_back("isend", x, p);
    ops.emplace_back("irecv", collie::Tensor::zeros({kExchangeElements}), p);
  }
  enter();
  if (rank == fault_victim()) wait_for_go();
  collie::batch_isend_irecv(ops);
}

// Throws (exit 4, reported) when `got` holds anything but `want` everywhere.
void expect_all(const collie::Tensor& got, double want, const char* op, long round) {
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (got.item(i) != want) {
      throw std::runtime_error(std::string(op) + " in round " + std::to_string(round) +
                               ": element " + std::to_string(i) + " is " +
                               std::to_string(got.item(i)) + ", expected " + std::to_string(want));
    }
  }
}

// Rounds of small collectives, ring exchanges and now and then a new group,
// every result checked, while the test SIGSTOPs ranks at random for a fraction
// of the deadline. Rank 0 ends the rounds kPauseStormSeconds after entering: its
// flag rides in the round's all_reduce, so every rank stops after the same
// round. Writes rounds.<rank>.
constexpr double kPauseStormSeconds = 3.0;

void pause_storm(int rank, int n) {
  enter();
  const double sum = n * (n + 1) / 2.0;
  long round = 0;
  for (bool more = true; more; ++round) {
    // 16 elements of rank + 1 + round % 5, then rank 0's "go on" flag.
    auto x = collie::Tensor::full({17}, rank + 1 + round % 5);
    const bool go_on =
        rank == 0 && static_cast<double>(now_ns() - g_enter) * 1e-9 < kPauseStormSeconds;
    x.data<float>()[16] = go_on ? 1.0f : 0.0f;
    auto reduced = collie::all_reduce(x).first;
    expect_all(reduced.slice(0, 16), sum + n * (round % 5), "all_reduce", round);
    more = reduced.item(16) == 1.0;

    const int root = static_cast<int>(round % n);
    auto b = collie::broadcast(collie::Tensor::full({8}, rank == root ? round % 1000 : -1), root);
    expect_all(b, static_cast<double>(round % 1000), "broadcast", round);

    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    auto got =
        collie::batch_isend_irecv({collie::P2POp("isend", collie::Tensor::full({4}, rank), next),
                                   collie::P2POp("irecv", collie::Tensor::zeros({4}), prev)});
    expect_all(got[1], prev, "batch_isend_irecv", round);

    if (round % 8 == 0) {  // 4 rows of 4 to every rank: row d of rank r holds r * 100 + d
      std::vector<float> rows;
      for (int d = 0; d < n; ++d) rows.insert(rows.end(), 4, static_cast<float>(rank * 100 + d));
      auto a =
          collie::all_to_all_single_with_output_shape({4 * n}, collie::Tensor::from_vector(rows))
              .first;
      for (int p = 0; p < n; ++p)
        expect_all(a.slice(4 * p, 4 * p + 4), p * 100 + rank, "all_to_all", round);
    }
    if (round % 16 == 0) {  // 256 KiB each way: streamed through the ring, or pulled
      auto m = collie::batch_isend_irecv(
          {collie::P2POp("isend", collie::Tensor::full({1 << 16}, rank), next),
           collie::P2POp("irecv", collie::Tensor::zeros({1 << 16}), prev)});
      expect_all(m[1].slice(0, 64), prev, "batch_isend_irecv of 256 KiB", round);
      expect_all(m[1].slice((1 << 16) - 64, 1 << 16), prev, "batch_isend_irecv of 256 KiB", round);
    }
    if (round % 256 == 128) {  // a group of the other ranks made, used and destroyed
      std::vector<int> others;
      for (int r = 0; r < n; ++r) {
        if (r != static_cast<int>(round / 256) % n) others.push_back(r);
      }
      const bool member = std::find(others.begin(), others.end(), rank) != others.end();
      if (member) {
        const std::string name = "storm" + std::to_string(round);
        collie::create_group(name, others);
        auto g =
            collie::all_reduce(collie::Tensor::full({4}, rank + 1), collie::ReduceOp::SUM, name)
                .first;
        double want = 0;
        for (int r : others) want += r + 1;
        expect_all(g, want, "all_reduce on a new group", round);
        collie::destroy_group(name);
      }
    }
    if (round % 32 == 0) {  // one that takes many steps through the slots
      auto big = collie::all_reduce(collie::Tensor::full({1 << 18}, rank + 1)).first;
      expect_all(big.slice(0, 64), sum, "all_reduce of 1 MiB", round);
      expect_all(big.slice((1 << 18) - 64, 1 << 18), sum, "all_reduce of 1 MiB", round);
    }
  }
  collie::faults::write_file_atomically(rank_file(g_dir, "rounds", g_rank),
                                        std::to_string(round) + "\n");
}

// Scenario bodies. `rank` and `n` come from the launcher's environment.
const std::map<std::string, std::function<void(int, int)>>& scenarios() {
  static const std::map<std::string, std::function<void(int, int)>> table = {
      // The test SIGKILLs / SIGSTOPs rank 1 once every rank is ready.
      {"kill_all_reduce",
       [](int, int) {
         collie::init();
         big_all_reduce();
       }},
      {"stop_all_reduce",
       [](int, int) {
         collie::init();
         big_all_reduce();
       }},
      {"kill_batch",
       [](int rank, int n) {
         collie::init();
         big_exchange(rank, n);
       }},
      {"kill_cma_all_reduce",
       [](int, int) {
         collie::init();
         cma_all_reduces();
       }},
      {"kill_cma_broadcast",
       [](int, int) {
         collie::init();
         huge_page_broadcasts();
       }},
      {"stop_cma_all_reduce",
       [](int, int) {
         collie::init();
         cma_all_reduces();
       }},
      // Rank 0 sends rank 1 a message that is pulled (COLLIE_P2P_PULL=always) once
      // the test has stopped rank 1: it cannot read it, and is killed.
      {"kill_pulled",
       [](int rank, int) {
         collie::init();
         auto x = collie::Tensor::ones({1 << 20});
         collie::barrier();
         enter();
         if (rank != 0) return;  // rank 1: stopped, then killed; rank 2: idle
         wait_for_go();
         collie::send(x, 1);
       }},
      // Rank 2 joins only after the test killed rank 1, which is then inside init().
      {"kill_init",
       [](int rank, int) {
         if (rank == 2) wait_for_go();
         enter();
         collie::init();
       }},
      {"pause_storm",
       [](int rank, int n) {
         collie::init();
         pause_storm(rank, n);
       }},
      // Rank 2 skips the last collective and stays alive.
      {"skip_last",
       [](int rank, int) {
         collie::init();
         collie::all_reduce(collie::Tensor::ones({64}));
         enter();
         if (rank == 2) return;  // alive and idle until the others have reported
         collie::all_reduce(collie::Tensor::ones({64}));
       }},
      // Rank 2 skips a barrier: its next all_reduce meets the others' barrier.
      {"skip_barrier",
       [](int rank, int) {
         collie::init();
         collie::all_reduce(collie::Tensor::ones({64}));
         enter();
         if (rank != 2) collie::barrier();
         collie::all_reduce(collie::Tensor::ones({64}));
       }},
      {"mismatch_dtype",
       [](int rank, int) {
         collie::init();
         auto dt = rank == 1 ? collie::DType::Float64 : collie::DType::Float32;
         auto x = collie::Tensor::ones({1 << 20}, dt);
         enter();
         collie::all_reduce(x);
       }},
      {"mismatch_count",
       [](int rank, int) {
         collie::init();
         auto x = collie::Tensor::ones({(1 << 20) - (rank == 1 ? 1 : 0)});
         enter();
         collie::all_reduce(x);
       }},
      {"mismatch_op",
       [](int rank, int) {
         collie::init();
         auto x = collie::Tensor::ones({1 << 20});
         enter();
         collie::all_reduce(x, rank == 1 ? collie::ReduceOp::MAX : collie::ReduceOp::SUM);
       }},
      // A rank that takes itself for the root, or reads a root whose call
      // matches its own, returns from the broadcast (rooted calls wait only for
      // the ranks they need, src/backends/shm/step_op.h) and raises at its next
      // call on the group: the barrier.
      {"mismatch_root",
       [](int rank, int) {
         collie::init();
         auto x = collie::Tensor::ones({1 << 16});
         enter();
         collie::broadcast(x, rank == 1 ? 1 : 0);
         collie::barrier();
       }},
      // Rank 0 lists {0, 1}; ranks 1 and 2 list {0, 1, 2}.
      {"group_mismatch",
       [](int rank, int) {
         collie::init();
         std::vector<int> ranks = rank == 0 ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2};
         enter();
         collie::create_group("g", ranks);
       }},
      // Rank 0 waits in a barrier until the test has seen its SIGUSR1 dump.
      {"sigusr1",
       [](int rank, int) {
         collie::init();
         enter();
         if (rank != 0) wait_for_go();
         collie::barrier();
       }},
  };
  return table;
}

bool lingers(const std::string& scenario) { return scenario.rfind("kill_", 0) == 0; }

}  // namespace

int main(int argc, char** argv) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, nullptr);

  const char* dir = std::getenv("COLLIE_FAULT_DIR");
  const char* rank_env = std::getenv("COLLIE_RANK");
  const char* size_env = std::getenv("COLLIE_WORLD_SIZE");
  if (argc < 2 || dir == nullptr || rank_env == nullptr || size_env == nullptr) {
    std::fprintf(stderr, "usage: COLLIE_FAULT_DIR=DIR collie run -n N fault_rank SCENARIO\n");
    return 4;
  }
  g_dir = dir;
  g_rank = std::atoi(rank_env);
  const int n = std::atoi(size_env);
  collie::faults::write_file_atomically(rank_file(g_dir, "pid", g_rank),
                                        std::to_string(getpid()) + "\n");
  auto it = scenarios().find(argv[1]);
  if (it == scenarios().end()) {
    std::fprintf(stderr, "fault_rank: unknown scenario '%s'\n", argv[1]);
    return 4;
  }
  int code = 0;
  try {
    it->second(g_rank, n);
    report("ok", "");
  } catch (const collie::CommError& e) {
    report("CommError", e.what());
    code = 3;
  } catch (const collie::TimeoutError& e) {
    report("TimeoutError", e.what());
    code = 3;
  } catch (const std::exception& e) {
    report(typeid(e).name(), e.what());
    code = 4;
  }
  wait_for_results(n, fault_victim());
  if (code != 0 && lingers(argv[1])) wait_for_sigterm(20);
  // Also after a failure: release() must not hang on a broken world.
  try {
    collie::release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_rank: release() threw: %s\n", e.what());
    code = 4;
  }
  return code;
}
