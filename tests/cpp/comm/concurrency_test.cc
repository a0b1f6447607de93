// Concurrency: two disjoint groups running at the same time, sub-group operations in
// flight while world operations run, many kinds of async operations queued on one group
// (they complete in issue order), sync ops issued while async ones are pending, and
// blocking waits abandoned through InterruptibleWaits (the Python binding's Ctrl-C).
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <new>
#include <thread>

#include "comm_test_util.h"
#include "runtime/interruptible_wait.h"

namespace collie::testing {
namespace {

// Groups {0, 1} and {2, 3} run independent streams of collectives at the same time.
TEST(Concurrency, TwoDisjointGroupsAtOnce) {
  run_ranks(4, [](int rank) {
    const std::vector<int> members = rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    const std::string name = rank < 2 ? "left" : "right";
    create_group(name, members);
    for (int k = 0; k < 40; ++k) {
      const int64_t count = (k % 4 == 3) ? 5000 : 1 + k;
      DType dt = all_dtypes()[static_cast<size_t>(k) % 10];
      const std::string what = "all_reduce #" + std::to_string(k) + " in " + name + " " + std::string(dtype_name(dt));
      Tensor x = make_tensor({count}, dt, [&](int64_t i) { return rank_value(dt, ReduceOp::SUM, rank, i + k); });
      auto [y, h] = all_reduce(x, ReduceOp::SUM, name);
      check_tensor(y, dt, {count}, [&](int64_t i) { return expected_reduction(dt, ReduceOp::SUM, members, i + k); },
                   what);
      Tensor b = broadcast(make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); }),
                           members[static_cast<size_t>(k % 2)], name);
      check_tensor(b, dt, {count}, [&](int64_t i) { return pattern_value(dt, members[static_cast<size_t>(k % 2)], i); },
                   "broadcast #" + std::to_string(k) + " in " + name);
    }
  }, small_chunks());
}

// An async op on a sub-group stays in flight while the world runs a synchronous op.
TEST(Concurrency, SubGroupOpsInterleavedWithWorldOps) {
  run_ranks(4, [](int rank) {
    const std::vector<int> pair = {3, 1};
    const std::vector<int> trio = {2, 0, 3};
    const bool in_pair = index_in(pair, rank) >= 0, in_trio = index_in(trio, rank) >= 0;
    if (in_pair) create_group("mix_pair", pair);
    if (in_trio) create_group("mix_trio", trio);
    for (int k = 0; k < 20; ++k) {
      const int64_t count = k % 5 == 0 ? 5000 : 7;
      std::pair<Tensor, CommHandle> pair_op, trio_op;
      if (in_pair) pair_op = all_reduce(Tensor::full({count}, rank + k, DType::Int32), ReduceOp::SUM, "mix_pair", true);
      if (in_trio) trio_op = all_gather_into_tensor(Tensor::full({count}, rank, DType::Int16), "mix_trio", true);
      auto [w, hw] = all_reduce(Tensor::full({count}, 1.0, DType::Int64));
      check_tensor(w, DType::Int64, {count}, [](int64_t) { return 4.0; }, "world all_reduce #" + std::to_string(k));
      if (in_trio) {
        trio_op.second.wait();
        check_tensor(trio_op.first, DType::Int16, {3 * count},
                     [&](int64_t i) { return double(trio[static_cast<size_t>(i / count)]); },
                     "trio all_gather #" + std::to_string(k));
      }
      if (in_pair) {
        pair_op.second.wait();
        check_tensor(pair_op.first, DType::Int32, {count}, [&](int64_t) { return 4.0 + 2 * k; },
                     "pair all_reduce #" + std::to_string(k));
      }
    }
  }, small_chunks());
}

// Different async collectives queued on one group; waiting for the last one means every
// earlier one has completed too (operations on one group complete in issue order).
TEST(Concurrency, AsyncOpsOfEveryKindCompleteInIssueOrder) {
  run_ranks(3, [](int rank) {
    for (int round = 0; round < 5; ++round) {
      std::vector<CommHandle> handles;
      auto ar = all_reduce(Tensor::full({1000}, rank + 1.0), ReduceOp::SUM, WORLD, true);
      handles.push_back(ar.second);
      auto ag = all_gather_into_tensor(Tensor::full({2}, rank, DType::Int8), WORLD, true);
      handles.push_back(ag.second);
      auto rs = reduce_scatter_tensor(Tensor::arange(int64_t{6}, DType::Float64), ReduceOp::MAX, WORLD, true);
      handles.push_back(rs.second);
      auto a2a = all_to_all_single_with_output_shape({3}, Tensor::full({3}, rank, DType::Int32), {}, {}, WORLD, true);
      handles.push_back(a2a.second);
      Tensor vc_out = Tensor::zeros({3});
      handles.push_back(all_to_all_v_c(vc_out, Tensor::full({3}, rank), {1, 1, 1, 1, 1, 1, 1, 1, 1}, WORLD, true));
      std::vector<Tensor> ins = {Tensor::full({1}, rank), Tensor::full({1}, rank), Tensor::full({1}, rank)};
      auto lists = all_to_all_with_output_shape({Shape{1}, Shape{1}, Shape{1}}, ins, WORLD, true);
      handles.push_back(lists.second);
      auto last = all_reduce(Tensor::full({3}, 1.0, DType::UInt8), ReduceOp::SUM, WORLD, true);
      last.second.wait();
      for (size_t k = 0; k < handles.size(); ++k) {
        RCHECK(handles[k].is_completed()) << "round " << round << ": op " << k
                                          << " not completed after a later op on the group";
      }
      for (auto& h : handles) h.wait();
      check_tensor(ar.first, DType::Float32, {1000}, [](int64_t) { return 6.0; }, "all_reduce");
      check_tensor(ag.first, DType::Int8, {6}, [](int64_t i) { return double(i / 2); }, "all_gather");
      check_tensor(rs.first, DType::Float64, {2}, [rank](int64_t i) { return 2.0 * rank + i; }, "reduce_scatter");
      check_tensor(a2a.first, DType::Int32, {3}, [](int64_t i) { return double(i); }, "all_to_all_single");
      check_tensor(vc_out, DType::Float32, {3}, [](int64_t i) { return double(i); }, "all_to_all_v_c");
      for (size_t k = 0; k < 3; ++k) {
        check_tensor(lists.first[k], DType::Float32, {1}, [k](int64_t) { return double(k); }, "all_to_all lists");
      }
      check_tensor(last.first, DType::UInt8, {3}, [](int64_t) { return 3.0; }, "last all_reduce");
    }
  });
}

// wait_for gives up (false) while a peer holds the op back, and wait() then completes it.
TEST(Concurrency, WaitForReturnsFalseWhileIncomplete) {
  SharedMemory shared(sizeof(std::atomic<int>));
  auto* go = new (shared.data()) std::atomic<int>(0);
  run_ranks(2, [go](int rank) {
    if (rank == 1) {
      const auto start = std::chrono::steady_clock::now();
      while (go->load() == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    auto [y, h] = all_reduce(Tensor::full({4}, rank + 1.0), ReduceOp::SUM, WORLD, true);
    if (rank == 0) {
      RCHECK(!h.wait_for(0.05)) << "wait_for returned true although rank 1 has not joined";
      RCHECK(!h.is_completed());
      go->store(1);
    }
    h.wait();
    RCHECK(h.wait_for(0));
    check_tensor(y, DType::Float32, {4}, [](int64_t) { return 3.0; }, "all_reduce after wait_for");
  });
}

// release() waits for queued operations: results of ops never waited for are valid after it.
TEST(Concurrency, ReleaseWaitsForQueuedOps) {
  RunOptions o;
  o.call_init = false;
  run_ranks(3, [](int rank) {
    init();
    std::vector<std::pair<Tensor, CommHandle>> pending;
    for (int k = 0; k < 10; ++k) {
      pending.push_back(all_reduce(Tensor::full({2000}, rank + k, DType::Int32), ReduceOp::SUM, WORLD, true));
    }
    release();
    for (int k = 0; k < 10; ++k) {
      check_tensor(pending[static_cast<size_t>(k)].first, DType::Int32, {2000},
                   [k](int64_t) { return 3.0 + 3 * k; }, "all_reduce #" + std::to_string(k) + " after release()");
    }
  }, o);
}

// Point-to-point traffic in flight while collectives run on the same group.
TEST(Concurrency, P2PInFlightDuringCollectives) {
  run_ranks(3, [](int rank) {
    const int next = (rank + 1) % 3, prev = (rank + 2) % 3;
    for (int k = 0; k < 10; ++k) {
      CommHandle s = isend(Tensor::full({3000}, rank * 100 + k, DType::Int32), next, WORLD, k);
      auto [got, r] = irecv(Tensor::zeros({3000}, DType::Int32), prev, WORLD, k);
      auto [y, h] = all_reduce(Tensor::full({10}, 1.0));
      check_tensor(y, DType::Float32, {10}, [](int64_t) { return 3.0; }, "all_reduce with p2p in flight");
      r.wait();
      s.wait();
      check_tensor(got, DType::Int32, {3000}, [&](int64_t) { return prev * 100.0 + k; },
                   "irecv #" + std::to_string(k));
    }
  }, small_chunks());
}

// After a blocking call (the caller drove the engine and its progress thread
// stood aside), asynchronous transfers waited for with wait_for complete at once:
// the waiter drives them. They used to wait for the progress thread, which
// nobody woke: 20 ms per exchange. A lost wake-up, not a speed judgement: the
// bound is about a thousand times an exchange's normal time, so only every
// other exchange sleeping fails it.
TEST(Concurrency, WaitForAfterBlockingCallIsNotLeftToASleepingThread) {
  run_ranks(2, [](int rank) {
    const int peer = 1 - rank;
    std::vector<double> ms;
    for (int k = 0; k < 20; ++k) {
      barrier();
      const auto start = std::chrono::steady_clock::now();
      CommHandle s = isend(Tensor::full({2}, rank * 10 + k, DType::Int32), peer);
      auto [got, r] = irecv(Tensor::zeros({2}, DType::Int32), peer);
      RCHECK(r.wait_for(60) && s.wait_for(60)) << "exchange #" << k << " did not complete in 60 s";
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
      check_tensor(
          got, DType::Int32, {2}, [&](int64_t) { return peer * 10.0 + k; },
          "irecv #" + std::to_string(k));
    }
    std::sort(ms.begin(), ms.end());
    RCHECK(ms[ms.size() / 2] < 15) << "median exchange after a barrier took " << ms[ms.size() / 2]
                                   << " ms: the waiter is not driving its transfers";
  });
}

// An irecv posted before its message and never waited for still completes: its
// posting does not wake the progress thread (the sender's ring does), so here
// only the sender's ring can get it done. Small (in the ring) and large
// (pulled where CMA works) messages, each posted before the peer sends.
TEST(Concurrency, IrecvPostedBeforeItsMessageCompletesInTheBackground) {
  run_ranks(2, [](int rank) {
    for (int64_t n : {int64_t{2}, int64_t{64} << 10}) {
      barrier();
      if (rank == 1) {
        auto [got, h] = irecv(Tensor::zeros({n}, DType::Float32), 0, WORLD, 5);
        RCHECK(!h.is_completed()) << "the message came before it was sent";
        barrier();  // now rank 0 sends
        const auto start = std::chrono::steady_clock::now();
        while (!h.is_completed() &&
               std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // not waiting: not driving
        }
        RCHECK(h.is_completed()) << n << "-element irecv not completed in the background in 60 s";
        check_tensor(
            got, DType::Float32, {n}, [](int64_t i) { return 1.0 + static_cast<double>(i % 7); },
            "irecv of " + std::to_string(n));
      } else {
        barrier();
        send(make_tensor({n}, DType::Float32,
                         [](int64_t i) { return 1.0 + static_cast<double>(i % 7); }),
             1, WORLD, 5);
      }
    }
    barrier();
  });
}

// Asynchronous work posted after a blocking call and never waited for still
// completes: the progress thread picks it up by itself.
TEST(Concurrency, AsyncSendAfterBlockingCallCompletesInTheBackground) {
  run_ranks(2, [](int rank) {
    barrier();
    if (rank == 0) {
      CommHandle s = isend(Tensor::full({64 << 10}, 7.0, DType::Float32), 1);  // 256 KiB
      const auto start = std::chrono::steady_clock::now();
      while (!s.is_completed() &&
             std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // not waiting: not driving
      }
      RCHECK(s.is_completed()) << "isend not completed in the background within 60 s";
    } else {
      Tensor got = recv(Tensor::zeros({64 << 10}, DType::Float32), 0);
      check_tensor(
          got, DType::Float32, {64 << 10}, [](int64_t) { return 7.0; }, "recv");
    }
    barrier();
  });
}

// A blocking send to a rank that computes right after a large blocking call
// completes before that rank posts its receive: the receiver's progress thread,
// parked while the call drove the engine and left parked after it
// (docs/design.md, "Who progresses"), is woken by the waiting sender and buffers
// the message. A small message (in the ring) and a large one (pulled, or streamed
// through a ring too small for it). Rank 0 tells rank 1 through shared memory
// outside collie, since rank 1 must not call collie meanwhile.
TEST(Concurrency, SendToARankComputingAfterALargeCallCompletesBeforeItsReceive) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* sent = new (page) std::atomic<int64_t>(0);  // the size rank 0's send completed with
  run_ranks(2, [sent](int rank) {
    for (int64_t n : {int64_t{2}, int64_t{1} << 20}) {
      barrier();
      auto [sum, h] = all_reduce(Tensor::full({int64_t{1} << 20}, 1.0, DType::Float32));  // 4 MiB
      RCHECK_EQ(sum.item(0), 2.0);
      auto value = [](int64_t i) { return 1.0 + static_cast<double>(i % 5); };
      if (rank == 0) {
        send(make_tensor({n}, DType::Float32, value), 1, WORLD, 9);
        sent->store(n);
      } else {
        const auto start = std::chrono::steady_clock::now();
        while (sent->load() != n &&
               std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // computing: no collie call
        }
        RCHECK_EQ(sent->load(), n)
            << "the send of " << n << " elements did not complete while this rank computed";
        Tensor got = recv(Tensor::zeros({n}, DType::Float32), 0, WORLD, 9);
        check_tensor(got, DType::Float32, {n}, value, "recv of " + std::to_string(n));
      }
    }
    barrier();
  });
  munmap(page, 4096);
}

// A blocking call abandoned by an InterruptibleWaits check (Python: Ctrl-C) goes on
// in the background, with its tensors kept: rank 0 gives up on an all_reduce, a
// recv and a two-op batch before rank 1 comes, drops every tensor of them, and
// later calls see the abandoned ones complete in order (ASan, in the sanitizer
// run, would see a write into freed memory). A check that says no keeps waiting.
TEST(Concurrency, AbandonedBlockingWaitsKeepTheirTensors) {
  run_ranks(2, [](int rank) {
    static std::atomic<int> checks{0};
    checks = 0;
    auto give_up = [] { return ++checks >= 2; };  // after about 2 x 50 ms
    if (rank == 0) {
      {
        collie::detail::InterruptibleWaits scope(+give_up);
        RCHECK_THROWS_DERIVED(all_reduce(Tensor::full({1000}, 1.0)),
                              collie::detail::WaitInterrupted);
        checks = 0;
        RCHECK_THROWS_DERIVED(recv(Tensor::zeros({1000}), 1, WORLD, 5),
                              collie::detail::WaitInterrupted);
        checks = 0;
        RCHECK_THROWS_DERIVED(
            batch_isend_irecv({P2POp("isend", Tensor::full({1000}, 3.0), 1, WORLD, 6),
                               P2POp("irecv", Tensor::zeros({1000}), 1, WORLD, 7)}),
            collie::detail::WaitInterrupted);
      }
      // Scribble over freed memory of those sizes, then check that later calls
      // still line up (the abandoned ones took rank 1's first messages).
      std::vector<Tensor> fill;
      for (int i = 0; i < 16; ++i) fill.push_back(Tensor::full({1000}, -9.0));
      auto [sum, h] = all_reduce(Tensor::full({4}, 1.0));
      check_tensor(
          sum, DType::Float32, {4}, [](int64_t) { return 2.0; }, "all_reduce after");
      Tensor second = recv(Tensor::zeros({3}), 1, WORLD, 5);
      check_tensor(
          second, DType::Float32, {3}, [](int64_t) { return 5.0; }, "second tag-5 message");
      collie::detail::InterruptibleWaits patient(+[] { return false; });
      Tensor later = recv(Tensor::zeros({2}), 1, WORLD, 8);  // comes after 150 ms
      check_tensor(
          later, DType::Float32, {2}, [](int64_t) { return 8.0; }, "patient recv");
      for (const Tensor& f : fill) {
        check_tensor(
            f, DType::Float32, {1000}, [](int64_t) { return -9.0; },
            "memory the abandoned calls gave back, reused");
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      auto [y, h] = all_reduce(Tensor::full({1000}, 2.0));
      check_tensor(
          y, DType::Float32, {1000}, [](int64_t) { return 3.0; }, "abandoned all_reduce");
      send(Tensor::full({1000}, 4.0), 0, WORLD, 5);
      Tensor got =
          std::move(batch_isend_irecv({P2POp("irecv", Tensor::zeros({1000}), 0, WORLD, 6),
                                       P2POp("isend", Tensor::full({1000}, 7.0), 0, WORLD, 7)})[0]);
      check_tensor(
          got, DType::Float32, {1000}, [](int64_t) { return 3.0; }, "abandoned batch's send");
      auto [sum, h2] = all_reduce(Tensor::full({4}, 1.0));
      send(Tensor::full({3}, 5.0), 0, WORLD, 5);
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      send(Tensor::full({2}, 8.0), 0, WORLD, 8);
    }
  });
}

}  // namespace
}  // namespace collie::testing
