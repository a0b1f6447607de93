// P2POp construction and batch_isend_irecv: the docstring ring on 2-4 ranks (placeholder
// for isend, received tensor for irecv; ops in a braced list, a vector or a span),
// receives described by shape + dtype, any order of
// ops, an all-pairs exchange, a 64 MiB ring exchange each way, a run of ops on one
// group as one call (one sequence number), and the errors (the first raised while
// the batch's other transfers carry on).
#include <array>
#include <atomic>
#include <cstdlib>
#include <new>
#include <regex>
#include <span>
#include <string>
#include <thread>

#include "comm_test_util.h"
#include "runtime/runtime_state.h"

namespace collie::testing {
namespace {

RunOptions without_init() {
  RunOptions o;
  o.call_init = false;
  return o;
}

TEST(P2POp, Construction) {
  run_ranks(1, [](int) {
    SoftChecks soft;
    Tensor send_tensor = Tensor::scalar(1.0);
    P2POp send_op("isend", send_tensor, 1);
    RCHECK(send_op.kind == P2POp::Kind::ISEND);
    RCHECK_EQ(send_op.peer, 1);
    RCHECK_EQ(send_op.tag, 0);
    RCHECK_EQ(send_op.group, std::string(WORLD));
    RCHECK_EQ(send_op.tensor.item(), 1.0);

    P2POp recv_op("irecv", Tensor::zeros({2, 3}, DType::Int16), 0, "some_group", 4);
    RCHECK(recv_op.kind == P2POp::Kind::IRECV);
    RCHECK_EQ(recv_op.receive_shape(), (Shape{2, 3}));  // the template's
    RCHECK(!recv_op.by_shape);
    RCHECK_EQ(recv_op.recv_dtype, DType::Int16);
    RCHECK_EQ(recv_op.group, std::string("some_group"));
    RCHECK_EQ(recv_op.tag, 4);

    P2POp by_shape("irecv", Shape{}, 0, WORLD, 0, DType::Float32);
    RCHECK(by_shape.kind == P2POp::Kind::IRECV);
    RCHECK_EQ(by_shape.recv_shape, Shape{});
    RCHECK_EQ(by_shape.receive_shape(), Shape{});
    RCHECK(by_shape.by_shape);
    P2POp by_2d_shape("irecv", Shape{4, 1}, 0, WORLD, 0, DType::Int8);
    RCHECK_EQ(by_2d_shape.receive_shape(), (Shape{4, 1}));
    RCHECK_EQ(by_shape.recv_dtype, DType::Float32);

    SOFT_THROWS(soft, P2POp("send", send_tensor, 1), collie::ValueError, "isend", "irecv");
    SOFT_THROWS(soft, P2POp("ISEND", send_tensor, 1), collie::ValueError);
    SOFT_THROWS(soft, P2POp("", Shape{2}, 0, WORLD, 0, DType::Float32), collie::ValueError);
    soft.finish();
  }, without_init());
}

// Counts this thread's calls of the global operator new (replaced at the end of
// this file for the whole test binary; the memory still comes from malloc).
thread_local int64_t allocations = 0;

// P2POp's group: the world's four names are held without allocating (a P2POp of
// the world group costs no heap memory to make or copy) and never alias the
// caller's string; any other name is its own copy.
TEST(P2POp, GroupName) {
  for (std::string_view world :
       {WORLD, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP}) {
    std::string spelled(world);  // an equal string elsewhere in memory
    const int64_t before = allocations;
    GroupName name(spelled);
    GroupName copy = name;
    EXPECT_EQ(allocations, before) << world << ": made and copied without allocating";
    spelled.assign(spelled.size(), '#');
    EXPECT_TRUE(name == world && copy == world) << world << " does not alias the argument";
  }
  EXPECT_TRUE(GroupName().view() == WORLD) << "the default is the world";
  GroupName copy = GroupName("x");
  {
    std::string temporary = "a_group_name_longer_than_sixteen_chars";
    GroupName owned(temporary);
    copy = owned;
    temporary.assign(temporary.size(), '#');  // the names must not alias it
    EXPECT_TRUE(owned == "a_group_name_longer_than_sixteen_chars") << owned.view();
  }
  EXPECT_TRUE(copy.str() == "a_group_name_longer_than_sixteen_chars") << copy.view();
  EXPECT_TRUE(GroupName("").view().empty());
  EXPECT_TRUE(!(GroupName("collie_world_grou") == WORLD)) << "a prefix is another name";
}

class BatchRing : public ::testing::TestWithParam<int> {};

// The docstring example: send rank+1 to the next rank, receive from the previous one;
// returns (placeholder, received) = (0, prev+1).
TEST_P(BatchRing, DocstringRing) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    Tensor send_tensor = Tensor::scalar(rank + 1, DType::Float32);
    Tensor recv_tensor = Tensor::scalar(0.0, DType::Float32);
    std::vector<Tensor> out = batch_isend_irecv({P2POp("isend", send_tensor, next),
                                                 P2POp("irecv", recv_tensor, prev)});
    RCHECK_EQ(out.size(), size_t{2});
    check_tensor(out[0], DType::Float32, {}, [](int64_t) { return 0.0; }, "isend placeholder");
    check_tensor(out[1], DType::Float32, {}, [prev](int64_t) { return prev + 1.0; }, "irecv result");
    // Inputs are not modified.
    RCHECK_EQ(send_tensor.item(), rank + 1.0);
    RCHECK_EQ(recv_tensor.item(), 0.0);

    // Same exchange, receive listed first and described by shape + dtype.
    out = batch_isend_irecv({P2POp("irecv", Shape{3}, prev, WORLD, 0, DType::Int64),
                             P2POp("isend", Tensor::full({3}, 7.0 * rank, DType::Int64), next)});
    check_tensor(out[0], DType::Int64, {3}, [prev](int64_t) { return 7.0 * prev; }, "irecv by shape");
    check_tensor(out[1], DType::Float32, {}, [](int64_t) { return 0.0; }, "isend placeholder");

    // Any contiguous range of ops: here a std::array, through std::span.
    const std::array<P2POp, 2> fixed{P2POp("isend", Tensor::full({2}, rank - 5.0), next),
                                     P2POp("irecv", Shape{2}, prev, WORLD, 0, DType::Float32)};
    out = batch_isend_irecv(std::span<const P2POp>(fixed));
    check_tensor(
        out[1], DType::Float32, {2}, [prev](int64_t) { return prev - 5.0; }, "irecv from a span");
  });
}

// An isend's placeholder is a zero of its own in every result, though a thread
// hands the one nobody holds any more out again: a placeholder written to and
// dropped comes back zeroed, and one still held is neither handed out again nor
// zeroed by a later batch.
TEST(BatchIsendIrecv, EveryPlaceholderIsAZeroOfItsOwn) {
  run_ranks(2, [](int rank) {
    const int peer = 1 - rank;
    auto exchange = [&] {
      return batch_isend_irecv({P2POp("isend", Tensor::scalar(rank + 1.0), peer),
                                P2POp("isend", Tensor::scalar(rank + 2.0), peer),
                                P2POp("irecv", Shape{}, peer, WORLD, 0, DType::Float32),
                                P2POp("irecv", Shape{}, peer, WORLD, 0, DType::Float32)});
    };
    for (int round = 0; round < 3; ++round) {
      std::vector<Tensor> out = exchange();
      RCHECK_EQ(out[0].item(), 0.0);
      RCHECK_EQ(out[1].item(), 0.0);
      RCHECK(out[0].data_ptr() != out[1].data_ptr());  // two isends, two placeholders
      RCHECK_EQ(out[2].item(), peer + 1.0);
      RCHECK_EQ(out[3].item(), peer + 2.0);
      out[0].at<float>({}) = 5.0f;  // written to, then dropped with `out`
      out[1].at<float>({}) = 6.0f;
    }
    std::vector<Tensor> held = exchange();
    held[0].at<float>({}) = 7.0f;
    std::vector<Tensor> later = exchange();
    RCHECK_EQ(held[0].item(), 7.0);
    RCHECK(later[0].data_ptr() != held[0].data_ptr());
    RCHECK(later[1].data_ptr() != held[0].data_ptr());
    RCHECK_EQ(later[0].item(), 0.0);
    RCHECK_EQ(later[1].item(), 0.0);
  });
}

// A placeholder written to and dropped on another thread comes back zeroed: its
// reuse orders that thread's write before the zeroing (under ThreadSanitizer,
// which cannot see that ordering, every isend gets a new placeholder).
TEST(BatchIsendIrecv, PlaceholderDroppedOnAnotherThreadComesBackZero) {
  run_ranks(2, [](int rank) {
    const int peer = 1 - rank;
    auto exchange = [&] {
      return batch_isend_irecv({P2POp("isend", Tensor::scalar(rank + 1.0), peer),
                                P2POp("irecv", Shape{}, peer, WORLD, 0, DType::Float32)});
    };
    std::vector<Tensor> out = exchange();
    for (int round = 0; round < 3; ++round) {
      RCHECK_EQ(out[0].item(), 0.0);
      RCHECK_EQ(out[1].item(), peer + 1.0);
      // The flag is relaxed and the join comes after the next exchange, so
      // neither orders the write before the reuse (the drop's release does; so,
      // in this test, do reference counts of state the two threads share).
      std::atomic<bool> dropped{false};
      const void* dropped_at = out[0].data_ptr();
      std::thread elsewhere([&dropped, placeholder = std::move(out[0])]() mutable {
        placeholder.at<float>({}) = 9.0f;
        placeholder = Tensor();
        dropped.store(true, std::memory_order_relaxed);
      });
      out.clear();
      while (!dropped.load(std::memory_order_relaxed)) std::this_thread::yield();
      out = exchange();
      elsewhere.join();
#if !defined(__SANITIZE_THREAD__)
      RCHECK(out[0].data_ptr() == dropped_at);  // the same placeholder, handed out again
#else
      (void)dropped_at;
#endif
    }
    RCHECK_EQ(out[0].item(), 0.0);
  });
}

// An irecv's result takes its template's shape, whatever the template's layout
// (a contiguous template lends its layout to the result), and op.recv_dtype
// where a caller set it apart from the template's dtype; the result is always
// a contiguous tensor of its own, and the template is left as it was.
TEST(BatchIsendIrecv, IrecvTemplatesOfAnyLayout) {
  run_ranks(2, [](int rank) {
    const int peer = 1 - rank;
    auto value = [](int src, int64_t i) { return 10.0 * src + static_cast<double>(i); };
    const Tensor sent =
        make_tensor({2, 3}, DType::Float32, [&](int64_t i) { return value(rank, i); });
    const Tensor sent_int =
        make_tensor({2, 3}, DType::Int32, [&](int64_t i) { return value(rank, i); });
    const Tensor contiguous = Tensor::zeros({2, 3});
    const Tensor transposed = Tensor::zeros({3, 2}).transpose(0, 1);  // shape [2, 3], strided
    const Tensor offset_rows = Tensor::zeros({4, 3}).slice(1, 3);     // shape [2, 3], offset 3
    P2POp other_dtype("irecv", Tensor::zeros({2, 3}), peer);          // float32 template ...
    other_dtype.recv_dtype = DType::Int32;                            // ... receiving int32
    std::vector<Tensor> out = batch_isend_irecv(
        {P2POp("isend", sent, peer), P2POp("isend", sent, peer), P2POp("isend", sent, peer),
         P2POp("isend", sent_int, peer), P2POp("irecv", contiguous, peer),
         P2POp("irecv", transposed, peer), P2POp("irecv", offset_rows, peer), other_dtype});
    const char* names[] = {"contiguous template", "transposed template", "template at an offset",
                           "int32 received on a float32 template"};
    for (size_t k = 4; k < 8; ++k) {
      const DType dtype = k == 7 ? DType::Int32 : DType::Float32;
      check_tensor(
          out[k], dtype, {2, 3}, [&](int64_t i) { return value(peer, i); }, names[k - 4]);
      RCHECK(out[k].is_contiguous()) << names[k - 4];
      RCHECK_EQ(out[k].storage_offset(), 0) << names[k - 4];
    }
    for (const Tensor* t : {&contiguous, &transposed, &offset_rows}) {
      RCHECK_EQ(t->to_double_vector(), std::vector<double>(6, 0.0)) << "a template is not written";
    }
    RCHECK(out[4].storage() != contiguous.storage()) << "the result has storage of its own";
  });
}

// n1: the ring is a batch that sends to and receives from oneself.
INSTANTIATE_TEST_SUITE_P(WorldSizes, BatchRing, ::testing::Values(1, 2, 3, 4), world_size_name);

// Every rank sends to and receives from every rank (itself included) in one batch, mixed
// dtypes and sizes larger than the 4 KiB rings, receives listed before sends on odd ranks.
TEST(BatchIsendIrecv, AllPairsMixedDtypes) {
  run_ranks(4, [](int rank) {
    const int n = 4;
    std::vector<P2POp> sends, recvs;
    auto dtype_for = [](int src, int dst) { return all_dtypes()[static_cast<size_t>(src * 4 + dst) % 10]; };
    auto count_for = [](int src, int dst) { return int64_t{1} + (src * 4 + dst) * 700; };
    for (int peer = 0; peer < n; ++peer) {
      DType out_dt = dtype_for(rank, peer), in_dt = dtype_for(peer, rank);
      sends.emplace_back("isend", make_tensor({count_for(rank, peer)}, out_dt, [&](int64_t i) {
        return pattern_value(out_dt, rank * 4 + peer, i);
      }), peer, WORLD, 11);
      recvs.emplace_back("irecv", Shape{count_for(peer, rank)}, peer, WORLD, 11, in_dt);
    }
    std::vector<P2POp> ops;
    const auto& first = rank % 2 ? recvs : sends;
    const auto& second = rank % 2 ? sends : recvs;
    ops.insert(ops.end(), first.begin(), first.end());
    ops.insert(ops.end(), second.begin(), second.end());
    std::vector<Tensor> out = batch_isend_irecv(ops);
    RCHECK_EQ(out.size(), ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      const P2POp& op = ops[k];
      if (op.kind == P2POp::Kind::ISEND) {
        check_tensor(out[k], DType::Float32, {}, [](int64_t) { return 0.0; }, "placeholder");
      } else {
        const int src = op.peer;
        DType dt = dtype_for(src, rank);
        check_tensor(out[k], dt, {count_for(src, rank)},
                     [&](int64_t i) { return pattern_value(dt, src * 4 + rank, i); },
                     "from rank " + std::to_string(src));
      }
    }
  }, small_chunks());
}

// The design's liveness requirement: 4 ranks, each sends 64 MiB to the next rank and
// receives 64 MiB from the previous one in one batch.
TEST(BatchIsendIrecv, RingExchange64MiB) {
  run_ranks(4, [](int rank) {
    const int n = 4, next = (rank + 1) % n, prev = (rank + n - 1) % n;
    const int64_t count = 16 * 1024 * 1024;  // int32 elements: 64 MiB
    Tensor payload = Tensor::empty({count}, DType::Int32);
    int32_t* p = payload.data<int32_t>();
    for (int64_t i = 0; i < count; ++i) p[i] = static_cast<int32_t>(i * 4 + rank);
    std::vector<Tensor> out = batch_isend_irecv({P2POp("isend", payload, next),
                                                 P2POp("irecv", Shape{count}, prev, WORLD, 0, DType::Int32)});
    const Tensor& got = out[1];
    RCHECK_EQ(got.shape(), Shape{count});
    RCHECK_EQ(got.dtype(), DType::Int32);
    const int32_t* q = got.data<int32_t>();
    int64_t bad = 0, first_bad = -1;
    for (int64_t i = 0; i < count; ++i) {
      if (q[i] != static_cast<int32_t>(i * 4 + prev)) {
        if (first_bad < 0) first_bad = i;
        ++bad;
      }
    }
    RCHECK_EQ(bad, int64_t{0}) << "64 MiB from rank " << prev << ": first wrong element " << first_bad;
  });
}

// Batches inside an unsorted sub-group: peers are world ranks.
TEST(BatchIsendIrecv, UnsortedSubGroup) {
  run_ranks(4, [](int rank) {
    const std::vector<int> trio = {2, 0, 3};
    const int g = index_in(trio, rank);
    if (g < 0) return;
    create_group("batch_trio", trio);
    const int next = trio[static_cast<size_t>((g + 1) % 3)], prev = trio[static_cast<size_t>((g + 2) % 3)];
    std::vector<Tensor> out = batch_isend_irecv(
        {P2POp("isend", Tensor::full({2}, rank, DType::UInt8), next, "batch_trio"),
         P2POp("irecv", Shape{2}, prev, "batch_trio", 0, DType::UInt8)});
    check_tensor(out[1], DType::UInt8, {2}, [prev](int64_t) { return double(prev); }, "batch in [2,0,3]");
  });
}

// One run of 40 transfers on 2 ranks, every message with one tag, receives
// before, between and after the sends: each receive must get the message sent
// in the same place (messages between a pair keep their order), whether it
// found it in the ring, waited for it, or took it from the unexpected ones.
TEST(BatchIsendIrecv, ARunOfManySmallSendsKeepsTheirOrder) {
  run_ranks(2, [](int rank) {
    const int peer = 1 - rank;
    constexpr int kMessages = 20;
    auto value = [](int src, int k) { return double(src * 1000 + k); };
    std::vector<P2POp> ops;
    for (int k = 0; k < 5; ++k) ops.emplace_back("irecv", Shape{3}, peer, WORLD, 0, DType::Int32);
    for (int k = 0; k < kMessages; ++k) {
      ops.emplace_back("isend", Tensor::full({3}, value(rank, k), DType::Int32), peer);
      if (k % 4 == 3) ops.emplace_back("irecv", Shape{3}, peer, WORLD, 0, DType::Int32);
    }
    while (ops.size() < 2 * kMessages)
      ops.emplace_back("irecv", Shape{3}, peer, WORLD, 0, DType::Int32);
    std::vector<Tensor> out = batch_isend_irecv(ops);
    RCHECK_EQ(out.size(), ops.size());
    int received = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == P2POp::Kind::ISEND) {
        check_tensor(
            out[i], DType::Float32, {}, [](int64_t) { return 0.0; }, "placeholder");
        continue;
      }
      const int k = received++;
      check_tensor(
          out[i], DType::Int32, {3}, [&](int64_t) { return value(peer, k); },
          "receive " + std::to_string(k));
    }
    RCHECK_EQ(received, kMessages);
  });
}

// More ops than a batch keeps on the stack (8), alternating between a pair group
// and the world: each op runs in the group it names (a world op after a pair op
// names a peer outside the pair: KeyError if it took the pair's lookup).
TEST(BatchIsendIrecv, TwelveOpsAlternatingGroups) {
  run_ranks(4, [](int rank) {
    const int n = 4, next = (rank + 1) % n, prev = (rank + n - 1) % n, partner = rank ^ 2;
    const std::string pair = rank % 2 == 0 ? "batch_pair_even" : "batch_pair_odd";
    create_group(pair, {std::min(rank, partner), std::max(rank, partner)});
    std::vector<P2POp> ops;
    for (int round = 0; round < 3; ++round) {
      ops.emplace_back("isend", Tensor::full({2}, rank * 100 + 10 + round, DType::Int64), partner,
                       pair, round);
      ops.emplace_back("irecv", Shape{2}, partner, pair, round, DType::Int64);
      ops.emplace_back("isend", Tensor::full({3}, rank * 100 + round, DType::Int32), next, WORLD,
                       round);
      ops.emplace_back("irecv", Shape{3}, prev, WORLD, round, DType::Int32);
    }
    std::vector<Tensor> out = batch_isend_irecv(ops);
    RCHECK_EQ(out.size(), size_t{12});
    for (int round = 0; round < 3; ++round) {
      const size_t k = static_cast<size_t>(round) * 4;
      check_tensor(
          out[k], DType::Float32, {}, [](int64_t) { return 0.0; }, "placeholder");
      check_tensor(
          out[k + 1], DType::Int64, {2}, [&](int64_t) { return partner * 100.0 + 10 + round; },
          "pair " + pair + ", round " + std::to_string(round));
      check_tensor(
          out[k + 3], DType::Int32, {3}, [&](int64_t) { return prev * 100.0 + round; },
          "world ring, round " + std::to_string(round));
    }
    destroy_group(pair);
  });
}

// Consecutive ops on one group are one call at the group's choke point: one
// sequence number, one flight-recorder entry. A run of one op is recorded as the
// op itself (its errors name it exactly).
TEST(BatchIsendIrecv, ARunOnOneGroupIsOneCall) {
  run_ranks(2, [](int rank) {
    const int peer = 1 - rank;
    barrier();
    std::vector<Tensor> out =
        batch_isend_irecv({P2POp("isend", Tensor::full({2}, rank), peer, WORLD, 0),
                           P2POp("irecv", Tensor::zeros({2}), peer, WORLD, 0),
                           P2POp("isend", Tensor::full({3}, rank + 10), peer, WORLD, 1),
                           P2POp("irecv", Tensor::zeros({3}), peer, WORLD, 1)});
    check_tensor(
        out[1], DType::Float32, {2}, [&](int64_t) { return double(peer); }, "tag 0");
    check_tensor(
        out[3], DType::Float32, {3}, [&](int64_t) { return peer + 10.0; }, "tag 1");
    out = batch_isend_irecv({P2POp("isend", Tensor::full({2}, rank), peer, WORLD, 3)});
    Tensor got = recv(Tensor::zeros({2}), peer, WORLD, 3);
    check_tensor(
        got, DType::Float32, {2}, [&](int64_t) { return double(peer); }, "one-op batch");
    barrier();
    const std::string d = collie::detail::lookup_for_op(WORLD, "test")->recorder().dump();
    std::smatch m;
    RCHECK(std::regex_search(
        d, m,
        std::regex(R"(seq (\d+) +barrier +completed.*\n)"
                   R"( *seq (\d+) +batch_isend_irecv of 4 transfers +completed.*\n)"
                   R"( *seq (\d+) +send float32 x2 peer \d \(group rank\) tag 3 +completed.*\n)"
                   R"( *seq (\d+) +recv float32 x2 peer \d \(group rank\) tag 3 +completed.*\n)"
                   R"( *seq (\d+) +barrier)")))
        << d;
    for (int k = 1; k < 5; ++k) RCHECK_EQ(std::stoi(m[k + 1]), std::stoi(m[k]) + 1) << d;
  });
}

// A batch raises its first error as soon as it is known, while its other
// transfers carry on in the background. Rank 0's batch receives from rank 1 (which
// sends the wrong size: CommError) and from rank 2, which sends only after rank 0
// has told it, so the batch can raise only by not waiting for that receive. The
// background receive then takes rank 2's first message: rank 0's next receive of
// the same tag gets the second.
TEST(BatchIsendIrecv, FirstErrorRaisedWhileOtherTransfersCarryOn) {
  RunOptions o;
  o.collie_timeout_seconds = 60;
  o.deadline_seconds = 30;  // waiting for the receive from rank 2 would hang until killed
  run_ranks(
      3,
      [](int rank) {
        if (rank == 0) {
          RCHECK_THROWS(batch_isend_irecv({P2POp("irecv", Tensor::zeros({4}), 1, WORLD, 1),
                                           P2POp("irecv", Tensor::zeros({4}), 2, WORLD, 2)}),
                        collie::CommError, "rank 1");
          send(Tensor::ones({1}), 2, WORLD, 9);  // "go ahead"
          Tensor second = recv(Tensor::zeros({4}), 2, WORLD, 2);
          check_tensor(
              second, DType::Float32, {4}, [](int64_t) { return 2.0; },
              "rank 2's second message (the batch's receive took the first)");
        } else if (rank == 1) {
          send(Tensor::ones({5}), 0, WORLD, 1);
        } else {
          recv(Tensor::zeros({1}), 0, WORLD, 9);
          send(Tensor::full({4}, 1.0), 0, WORLD, 2);
          send(Tensor::full({4}, 2.0), 0, WORLD, 2);
        }
        barrier();
      },
      o);
}

// A bad op after an isend fails the whole batch before the isend goes out:
// the peer's next message with that tag is the one sent after the failure.
// (Receives' outputs are made as they start, after the sends before them, so
// their shapes are checked with the groups and peers, up front.)
TEST(BatchIsendIrecv, ABadOpAfterAnIsendFailsBeforeItIsSent) {
  run_ranks(2, [](int rank) {
    if (rank == 0) {
      RCHECK_THROWS(batch_isend_irecv({P2POp("isend", Tensor::full({2}, 1.0), 1, WORLD, 5),
                                       P2POp("irecv", Shape{2, -1}, 1, WORLD, 5, DType::Float32)}),
                    collie::ValueError, "invalid shape [2, -1]");
      RCHECK_THROWS(batch_isend_irecv({P2POp("isend", Tensor::full({2}, 2.0), 1, WORLD, 5),
                                       P2POp("irecv", Tensor::zeros({2}), 7, WORLD, 5)}),
                    collie::KeyError, "src 7 is not a member");
      send(Tensor::full({2}, 3.0), 1, WORLD, 5);
    } else {
      Tensor got = recv(Tensor::zeros({2}), 0, WORLD, 5);
      check_tensor(
          got, DType::Float32, {2}, [](int64_t) { return 3.0; },
          "the message sent after the failed batches (theirs never went out)");
    }
    barrier();
  });
}

TEST(BatchIsendIrecv, Errors) {
  run_ranks(2, [](int) {
    SoftChecks soft;
    SOFT_THROWS(soft, batch_isend_irecv({}), collie::TypeError, "batch_isend_irecv");
    SOFT_THROWS_DERIVED(soft, batch_isend_irecv({P2POp("isend", Tensor::ones({1}), 5)}), collie::Error,
                              "batch_isend_irecv");
    soft.finish();
  });
}

}  // namespace
}  // namespace collie::testing

// The counting operator new of P2POp.GroupName. GCC cannot tell that the
// matching operator delete below is the only one, and warns about its free().
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t bytes) {
  ++collie::testing::allocations;
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
