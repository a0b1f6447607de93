// Deadlines on the mpi backend (MPI itself has none). Run with 2 ranks under mpirun:
//   1. a collective that rank 1 joins late fails on rank 0 with TimeoutError naming
//      the op and its sequence number; the group is then unusable (CommError), other
//      groups carry on; the abandoned MPI request completes when rank 1 joins, so
//      MPI_Finalize still runs and the job exits cleanly;
//   2. an irecv that no send matches fails with TimeoutError naming the peer;
//   3. create_group that the other member never calls fails with TimeoutError
//      naming that rank, instead of blocking in MPI_Comm_create_group;
//   4. an all_to_all whose counts disagree fails on every rank with CommError, and
//      the group stays usable;
//   5. a batch_isend_irecv whose second op has a tag MPI refuses raises ValueError
//      after its first op (a send) started, and that send is still delivered.
// Exits 0 and prints "deadlines: PASS" on rank 0 when every check holds.
#include <collie/collie.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

using namespace collie;

namespace {

int failures = 0;

void expect(bool ok, int rank, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, what.c_str());
  }
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Runs f, expecting exception type E whose message contains every part.
template <typename E, typename F>
void expect_throw(int rank, const std::string& what, F f,
                  std::initializer_list<const char*> parts) {
  try {
    f();
    expect(false, rank, what + ": no exception");
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* p : parts)
      expect(contains(msg, p), rank, what + ": message lacks '" + p + "': " + msg);
    if (rank == 0) std::printf("rank %d: %s -> %s\n", rank, what.c_str(), msg.c_str());
  } catch (const std::exception& e) {
    expect(false, rank, what + ": wrong exception type: " + e.what());
  }
}

}  // namespace

int main() {
  init();
  const int rank = get_rank();
  if (get_group_size() != 2 || backend_name() != "mpi") {
    std::fprintf(stderr, "deadlines: needs 2 ranks on the mpi backend (got %d on %s)\n",
                 get_group_size(), backend_name().c_str());
    return 2;
  }
  GroupOptions fast;
  fast.timeout_seconds = 1;
  create_group("fast", {0, 1}, fast);
  all_reduce(Tensor::ones({4}), ReduceOp::SUM, "fast");  // seq 1: both join

  // 1. Rank 1 joins seq 2 after rank 0's deadline.
  if (rank == 0) {
    auto t0 = std::chrono::steady_clock::now();
    expect_throw<TimeoutError>(rank, "late collective",
                               [] { all_reduce(Tensor::ones({4}), ReduceOp::SUM, "fast"); },
                               {"all_reduce", "seq 2", "'fast'", "timed out after 1 s"});
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect(waited >= 0.9 && waited < 10, rank, "the timeout took " + std::to_string(waited) + " s");
    expect_throw<CommError>(rank, "after the timeout", [] { barrier("fast"); },
                            {"barrier", "unusable"});
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    auto [y, h] = all_reduce(Tensor::ones({4}), ReduceOp::SUM, "fast");
    expect(y.item(0) == 2.0, rank,
           "the late all_reduce still completes with rank 0's abandoned request");
  }
  barrier();  // the world is unaffected

  // 2. A receive nobody sends to.
  GroupOptions quick;
  quick.timeout_seconds = 0.5;
  create_group("quick", {0, 1}, quick);
  if (rank == 0) {
    expect_throw<TimeoutError>(rank, "unmatched recv",
                               [] { recv(Tensor::zeros({3}), 1, "quick", 42); },
                               {"recv", "tag 42", "no message from rank 1"});
  }
  barrier();

  // 3. A group that rank 1 never creates.
  if (rank == 0) {
    expect_throw<TimeoutError>(rank, "lonely create_group",
                               [&] {
                                 create_group("lonely", {0, 1}, quick);
                               },
                               {"create_group 'lonely'", "rank(s) [1]"});
  }
  barrier();

  // 4. Counts that disagree: every rank fails alike and the group still works.
  std::vector<Tensor> inputs = {Tensor::ones({2}), Tensor::ones({2})};
  std::vector<Shape> shapes = {Shape{rank == 1 ? int64_t{3} : int64_t{2}}, Shape{2}};
  expect_throw<CommError>(rank, "all_to_all count mismatch",
                          [&] { all_to_all_with_output_shape(shapes, inputs); },
                          {"all_to_all", "sends 2 elements to rank 1, which expects 3"});
  auto [y, h] = all_reduce(Tensor::ones({1}));
  expect(y.item(0) == 2.0, rank, "the world works after the all_to_all mismatch");

  // 5. A batch whose second op has a tag MPI refuses: it raises ValueError naming
  // the batch, the transfer and the tag, after its first op (a send) started; that
  // send is still delivered, from a tensor only the batch held.
  const int peer = 1 - rank;
  expect_throw<ValueError>(
      rank, "batch with a bad tag",
      [&] {
        batch_isend_irecv({P2POp("isend", Tensor::full({3}, rank + 5.0), peer, WORLD, 7),
                           P2POp("irecv", Tensor::zeros({3}), peer, WORLD, -1)});
      },
      {"batch_isend_irecv of 2 transfers", "irecv from rank", "tag -1",
       "outside the range MPI allows"});
  Tensor got = recv(Tensor::zeros({3}), peer, WORLD, 7);
  expect(got.item(0) == peer + 5.0 && got.item(2) == peer + 5.0, rank,
         "the batch's started send arrived: " + std::to_string(got.item(0)));

  release();
  if (rank == 0 && failures == 0) std::printf("deadlines: PASS\n");
  return failures == 0 ? 0 : 1;
}
