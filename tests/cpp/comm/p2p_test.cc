// Point-to-point: send/recv, isend/irecv for every dtype and count (chunked through 4 KiB
// rings), rings over world sizes 2-4, tags matched out of order, FIFO per tag, sending to
// oneself, world ranks in unsorted sub-groups, non-contiguous sends, size/dtype mismatch;
// pulled messages (read from the sender's memory): the same results, mismatches,
// messages nobody receives yet (buffered after a grace), and a timed-out pulled
// send that must not be read later; the same for shared tensors, pulled from the
// sender's arena without CMA.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

TEST(P2P, SendRecvEveryDtypeAndCountBothWays) {
  run_ranks(2, [](int rank) {
    SoftChecks soft;
    const int peer = 1 - rank;
    for (DType dt : all_dtypes()) {
      for (int64_t count : element_counts()) {
        const std::string what = "send/recv " + case_name(dt, count, false);
        soft.check(what, [&] {
          Tensor mine = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          // Template with the right shape/dtype but other values: they must be ignored.
          Tensor templ = make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, 55, i); });
          Tensor got;
          if (rank == 0) {
            send(mine, peer);
            got = recv(templ, peer);
          } else {
            got = recv(templ, peer);
            send(mine, peer);
          }
          check_tensor(got, dt, {count}, [&](int64_t i) { return pattern_value(dt, peer, i); }, what);
          check_tensor(templ, dt, {count}, [&](int64_t i) { return pattern_value(dt, 55, i); },
                       what + " (template afterwards)");
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

class P2PRing : public ::testing::TestWithParam<int> {};

// isend to the next rank and irecv from the previous, all at once, every dtype and count.
TEST_P(P2PRing, IsendIrecvEveryDtypeAndCount) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    for (DType dt : all_dtypes()) {
      for (int64_t count : element_counts()) {
        const std::string what = "isend/irecv ring " + case_name(dt, count, true);
        soft.check(what, [&] {
          Tensor mine = make_tensor({count, 2}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          CommHandle sent = isend(mine, next);
          RCHECK(static_cast<bool>(sent)) << what << ": isend must return a handle";
          auto [got, received] = irecv(Tensor::zeros({count, 2}, dt), prev);
          RCHECK(static_cast<bool>(received)) << what << ": irecv must return a handle";
          received.wait();
          sent.wait();
          check_tensor(got, dt, {count, 2}, [&](int64_t i) { return pattern_value(dt, prev, i); }, what);
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

// n1: the ring is a send to oneself.
INSTANTIATE_TEST_SUITE_P(WorldSizes, P2PRing, ::testing::Values(1, 2, 3, 4), world_size_name);

// Two messages with different tags, received in the reverse order of sending; small ones
// and ones much larger than the 4 KiB ring.
TEST(P2P, TagsMatchOutOfOrder) {
  run_ranks(2, [](int rank) {
    for (int64_t count : {int64_t{3}, int64_t{20000}}) {
      const std::string what = "tags, count " + std::to_string(count);
      if (rank == 0) {
        CommHandle a = isend(Tensor::full({count}, 1.0, DType::Int32), 1, WORLD, /*tag=*/1);
        CommHandle b = isend(Tensor::full({count}, 2.0, DType::Int32), 1, WORLD, /*tag=*/2);
        a.wait();
        b.wait();
      } else {
        Tensor templ = Tensor::zeros({count}, DType::Int32);
        Tensor second = recv(templ, 0, WORLD, /*tag=*/2);
        Tensor first = recv(templ, 0, WORLD, /*tag=*/1);
        check_tensor(second, DType::Int32, {count}, [](int64_t) { return 2.0; }, what + " tag 2");
        check_tensor(first, DType::Int32, {count}, [](int64_t) { return 1.0; }, what + " tag 1");
      }
    }
  }, small_chunks());
}

// Messages with the same (source, group, tag) arrive in the order they were sent.
TEST(P2P, SameTagIsFifo) {
  run_ranks(2, [](int rank) {
    constexpr int kMessages = 20;
    if (rank == 0) {
      std::vector<CommHandle> handles;
      for (int k = 0; k < kMessages; ++k) handles.push_back(isend(Tensor::full({100 * (k % 3) + 1}, k), 1, WORLD, 5));
      for (auto& h : handles) h.wait();
    } else {
      for (int k = 0; k < kMessages; ++k) {
        Tensor got = recv(Tensor::zeros({100 * (k % 3) + 1}), 0, WORLD, 5);
        check_tensor(got, DType::Float32, {100 * (k % 3) + 1}, [k](int64_t) { return double(k); },
                     "message " + std::to_string(k));
      }
    }
  }, small_chunks());
}

// A ring whose size is not a power of two (65 cache lines: positions wrap with
// a division there, a mask otherwise): messages of mixed sizes wrap it many
// times, and one larger than the ring streams through it.
TEST(P2P, ARingOfAnySizeWrapsCorrectly) {
  RunOptions o;
  o.env = {{"COLLIE_P2P_RING_BYTES", "4160"}, {"COLLIE_P2P_PULL", "never"}};
  run_ranks(
      2,
      [](int rank) {
        constexpr int kMessages = 30;
        auto count_of = [](int k) -> int64_t {
          return k == kMessages - 1 ? 5000 : 97 * (k % 4) + 3;
        };
        if (rank == 0) {
          std::vector<CommHandle> handles;
          for (int k = 0; k < kMessages; ++k) {
            handles.push_back(isend(make_tensor({count_of(k)}, DType::Int32,
                                                [k](int64_t i) { return double(k * 10000 + i); }),
                                    1, WORLD, 9));
          }
          for (auto& h : handles) h.wait();
        } else {
          for (int k = 0; k < kMessages; ++k) {
            Tensor got = recv(Tensor::zeros({count_of(k)}, DType::Int32), 0, WORLD, 9);
            check_tensor(
                got, DType::Int32, {count_of(k)}, [k](int64_t i) { return double(k * 10000 + i); },
                "message " + std::to_string(k));
          }
        }
      },
      o);
}

TEST(P2P, SendToSelf) {
  run_ranks(2, [](int rank) {
    for (int64_t count : {int64_t{1}, int64_t{5000}}) {
      const std::string what = "send to self, count " + std::to_string(count);
      Tensor x = make_tensor({count}, DType::Float64, [&](int64_t i) { return pattern_value(DType::Float64, rank, i); });
      // irecv first, then a blocking send (the pairing the header documents).
      auto [y, h] = irecv(Tensor::zeros({count}, DType::Float64), rank);
      send(x, rank);
      h.wait();
      check_tensor(y, DType::Float64, {count}, [&](int64_t i) { return pattern_value(DType::Float64, rank, i); },
                   what + " (irecv + send)");
      // isend first, then a blocking recv.
      CommHandle s = isend(x, rank, WORLD, 3);
      Tensor z = recv(Tensor::zeros({count}, DType::Float64), rank, WORLD, 3);
      s.wait();
      check_tensor(z, DType::Float64, {count}, [&](int64_t i) { return pattern_value(DType::Float64, rank, i); },
                   what + " (isend + recv)");
    }
  }, small_chunks());
}

// dst/src are world ranks; in a group created as [3, 1] world rank 1 is group rank 1
// (MindSpore's sorted map would say 0 — collie has one map, the creation order).
TEST(P2P, WorldRanksInUnsortedSubGroups) {
  run_ranks(4, [](int rank) {
    const std::vector<int> pair = {3, 1};
    const std::vector<int> trio = {2, 0, 3};
    if (index_in(pair, rank) >= 0) {
      create_group("p2p_pair", pair);
      const int peer = rank == 3 ? 1 : 3;
      Tensor x = Tensor::full({6}, 10.0 * rank, DType::Int64);
      if (rank == 3) {
        send(x, 1, "p2p_pair");
        Tensor y = recv(Tensor::zeros({6}, DType::Int64), 1, "p2p_pair");
        check_tensor(y, DType::Int64, {6}, [](int64_t) { return 10.0; }, "recv from world rank 1 in [3,1]");
      } else {
        Tensor y = recv(Tensor::zeros({6}, DType::Int64), 3, "p2p_pair");
        check_tensor(y, DType::Int64, {6}, [](int64_t) { return 30.0; }, "recv from world rank 3 in [3,1]");
        send(x, peer, "p2p_pair");
      }
    }
    if (index_in(trio, rank) >= 0) {
      create_group("p2p_trio", trio);
      const int g = index_in(trio, rank);
      const int next = trio[static_cast<size_t>((g + 1) % 3)], prev = trio[static_cast<size_t>((g + 2) % 3)];
      CommHandle s = isend(Tensor::full({3}, rank, DType::Int16), next, "p2p_trio", 9);
      auto [y, h] = irecv(Tensor::zeros({3}, DType::Int16), prev, "p2p_trio", 9);
      h.wait();
      s.wait();
      check_tensor(y, DType::Int16, {3}, [prev](int64_t) { return double(prev); }, "ring in [2,0,3]");
    }
  });
}

TEST(P2P, NonContiguousSend) {
  run_ranks(2, [](int rank) {
    if (rank == 0) {
      Tensor base = Tensor::arange(int64_t{12}, DType::Float32).reshape({3, 4});
      send(base.transpose(0, 1), 1);  // [4, 3]: (a, b) = 4b + a
    } else {
      Tensor y = recv(Tensor::zeros({4, 3}), 0);
      check_tensor(y, DType::Float32, {4, 3}, [](int64_t k) { return 4.0 * (k % 3) + k / 3; },
                   "recv of a transposed send");
    }
  });
}

// A non-contiguous tensor is sent from a contiguous copy: that copy must live until
// the message is delivered, not only through the call's first pass. With 4 KiB
// rings a 6 KiB message does not fit, so most of it moves after send() has
// started waiting (and in a batch, after the batch started its other transfers);
// 2 MiB with the default rings.
TEST(P2P, NonContiguousSendOutlivesItsFirstPass) {
  for (bool small_rings : {true, false}) {
    run_ranks(
        2,
        [small_rings](int rank) {
          const int64_t rows = small_rings ? 24 : 512, cols = small_rings ? 64 : 1024;
          auto expect = [&](int64_t k) { return double((k % rows) * cols + k / rows); };
          const std::string what = std::to_string(rows * cols * 4) + " bytes";
          if (rank == 0) {
            Tensor base = Tensor::arange(rows * cols, DType::Float32).reshape({rows, cols});
            send(base.transpose(0, 1), 1);
            batch_isend_irecv({P2POp("isend", base.transpose(0, 1), 1)});
          } else {
            // Late receives: the sender's first pass is long over when they start.
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            Tensor y = recv(Tensor::zeros({cols, rows}), 0);
            check_tensor(y, DType::Float32, {cols, rows}, expect,
                         "recv of a transposed send, " + what);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            Tensor z =
                std::move(batch_isend_irecv({P2POp("irecv", Tensor::zeros({cols, rows}), 0)})[0]);
            check_tensor(z, DType::Float32, {cols, rows}, expect,
                         "batch recv of a transposed send, " + what);
          }
        },
        small_rings ? small_chunks() : RunOptions{});
  }
}

TEST(P2P, PeerNotInGroupIsAnError) {
  run_ranks(4, [](int rank) {
    SoftChecks soft;
    Tensor x = Tensor::ones({2});
    SOFT_THROWS_DERIVED(soft, send(x, 4), collie::Error, "send");
    SOFT_THROWS_DERIVED(soft, isend(x, -1), collie::Error, "isend");
    SOFT_THROWS_DERIVED(soft, recv(x, 9), collie::Error, "recv");
    SOFT_THROWS_DERIVED(soft, irecv(x, 4), collie::Error, "irecv");
    SOFT_THROWS_DERIVED(soft, send(x, 0, "no_such_group"), collie::Error, "send", "no_such_group");
    const std::vector<int> pair = {3, 1};
    if (index_in(pair, rank) < 0) return soft.finish();
    create_group("p2p_err_pair", pair);
    SOFT_THROWS_DERIVED(soft, send(x, 0, "p2p_err_pair"), collie::Error, "send");
    SOFT_THROWS_DERIVED(soft, recv(x, 2, "p2p_err_pair"), collie::Error, "recv");
    soft.finish();
  });
}

// A receive must name the sender's exact size and dtype: CommError otherwise.
TEST(P2P, SizeOrDtypeMismatchIsCommError) {
  run_ranks(2, [](int rank) {
    if (rank == 0) {
      CommHandle a = isend(Tensor::ones({4}), 1, WORLD, 1);
      CommHandle b = isend(Tensor::ones({4}, DType::Float32), 1, WORLD, 2);
      // The sends may complete or fail: the receiver is the one that must report it.
      for (CommHandle* h : {&a, &b}) {
        try {
          h->wait();
        } catch (const collie::Error&) {
        }
      }
    } else {
      RCHECK_THROWS(recv(Tensor::zeros({5}), 0, WORLD, 1), collie::CommError, "recv");
      RCHECK_THROWS(recv(Tensor::zeros({4}, DType::Int32), 0, WORLD, 2), collie::CommError, "recv");
    }
  });
}

// What a rank sends: a tensor as made (private), or a shared copy of it.
using MakeInput = Tensor (*)(const Tensor&);
Tensor as_made(const Tensor& x) { return x; }
// A shared tensor (collie/shared.h) holding `x`'s elements.
Tensor shared_copy(const Tensor& x) {
  Tensor t = empty_shared(x.shape(), x.dtype());
  RCHECK(is_shared(t)) << "empty_shared() must return a shared tensor";
  t.copy_from(x);
  return t;
}

// The exchanges both pull tests run on every rank of `n`, with inputs made by
// `input`: a ring of every size class (within the ring, beyond it), the same
// from a view 5 elements in (not page-aligned) in a batch, tags received out of
// order (pulled messages become deferred, then unexpected ones), and sizes that
// disagree, after which the pair carries on.
void pulled_or_streamed_exchanges(int rank, int n, MakeInput input) {
  SoftChecks soft;
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  for (DType dt : {DType::Float32, DType::Int8, DType::Float64}) {
    for (int64_t count : {int64_t{3}, int64_t{3000}, int64_t{70001}}) {
      const std::string what = std::string(dtype_name(dt)) + " count " + std::to_string(count);
      soft.check("ring " + what, [&] {
        Tensor x =
            input(make_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); }));
        CommHandle h = isend(x, next);
        Tensor y = recv(Tensor::zeros({count}, dt), prev);
        h.wait();
        check_tensor(
            y, dt, {count}, [&](int64_t i) { return pattern_value(dt, prev, i); }, "ring " + what);
        const int64_t part = count - 5;
        if (part <= 0) return;
        std::vector<Tensor> got =
            batch_isend_irecv({P2POp("isend", x.slice(5, count), next),
                               P2POp("irecv", Tensor::zeros({part}, dt), prev)});
        check_tensor(
            got[1], dt, {part}, [&](int64_t i) { return pattern_value(dt, prev, i + 5); },
            "view " + what);
      });
    }
  }
  soft.check("tags out of order", [&] {
    const int64_t count = 20000;
    if (rank == 0) {
      CommHandle a = isend(input(Tensor::full({count}, 1.0)), 1, WORLD, 1);
      CommHandle b = isend(input(Tensor::full({count}, 2.0)), 1, WORLD, 2);
      a.wait();
      b.wait();
    } else if (rank == 1) {
      Tensor second = recv(Tensor::zeros({count}), 0, WORLD, 2);
      Tensor first = recv(Tensor::zeros({count}), 0, WORLD, 1);
      check_tensor(
          second, DType::Float32, {count}, [](int64_t) { return 2.0; }, "tag 2");
      check_tensor(
          first, DType::Float32, {count}, [](int64_t) { return 1.0; }, "tag 1");
    }
  });
  soft.check("size mismatch, then the pair carries on", [&] {
    const int64_t count = 20000;
    if (rank == 0) {
      send(input(Tensor::ones({count})), 1, WORLD, 3);
      send(input(Tensor::full({count}, 4.0)), 1, WORLD, 4);
    } else if (rank == 1) {
      RCHECK_THROWS(recv(Tensor::zeros({count + 1}), 0, WORLD, 3), collie::CommError,
                    "bytes of float32 but this receive expects");
      Tensor y = recv(Tensor::zeros({count}), 0, WORLD, 4);
      check_tensor(
          y, DType::Float32, {count}, [](int64_t) { return 4.0; }, "after a mismatch");
    }
  });
  barrier();
  soft.finish();
}

// Messages that do not fit the (4 KiB) ring are pulled or streamed as
// COLLIE_P2P_PULL says; every result is the same either way.
using PullCase = std::tuple<int, std::string>;
class P2PPull : public ::testing::TestWithParam<PullCase> {};

TEST_P(P2PPull, SameResultsPulledOrStreamed) {
  const auto [n, policy] = GetParam();
  RunOptions o = small_chunks();
  o.env.push_back({"COLLIE_P2P_PULL", policy});
  run_ranks(
      n, [n = n](int rank) { pulled_or_streamed_exchanges(rank, n, as_made); }, o);
}

INSTANTIATE_TEST_SUITE_P(Policies, P2PPull,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values("always", "never")),
                         [](const ::testing::TestParamInfo<PullCase>& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

// Where the world stages (COLLIE_COPY_PATH=staged), a message that does not fit
// the ring is pulled if its data lies on huge pages (collie's own tensors of 2
// MiB or more ask for them) and streamed on 4 KiB pages (COLLIE_HUGE_PAGES=0):
// either way every rank receives exactly what its neighbour sent, from the
// start of a tensor or from an odd offset into one. Two ranks: with more ranks
// than CPUs every message beyond the ring is pulled anyway.
class P2PStagedBeyondTheRing : public ::testing::TestWithParam<std::string> {};

TEST_P(P2PStagedBeyondTheRing, ReceivesWhatWasSentOnEitherPageSize) {
  RunOptions o = small_chunks();
  o.env.push_back({"COLLIE_COPY_PATH", "staged"});
  o.env.push_back({"COLLIE_P2P_PULL", "auto"});
  o.env.push_back({"COLLIE_HUGE_PAGES", GetParam()});
  run_ranks(
      2,
      [](int rank) {
        const int next = 1 - rank, prev = 1 - rank;
        const int64_t count = (int64_t{3} << 20) / 4 + 7;  // a little over 3 MiB of float32
        Tensor x = make_tensor({count}, DType::Float32,
                               [&](int64_t i) { return pattern_value(DType::Float32, rank, i); });
        CommHandle h = isend(x, next);
        Tensor y = recv(Tensor::zeros({count}), prev);
        h.wait();
        check_tensor(
            y, DType::Float32, {count},
            [&](int64_t i) { return pattern_value(DType::Float32, prev, i); }, "whole");
        // 2.5 MiB starting 12 bytes into x (a view: not page-aligned).
        const int64_t part = (int64_t{5} << 19) / 4;
        CommHandle h2 = isend(x.slice(3, 3 + part), next);
        Tensor z = recv(Tensor::zeros({part}), prev);
        h2.wait();
        check_tensor(
            z, DType::Float32, {part},
            [&](int64_t i) { return pattern_value(DType::Float32, prev, i + 3); }, "offset");
      },
      o);
}

INSTANTIATE_TEST_SUITE_P(HugePages, P2PStagedBeyondTheRing, ::testing::Values("1", "0"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "1" ? std::string("huge_pages")
                                                    : std::string("small_pages");
                         });

// 4 KiB rings and every message that does not fit pulled; `timeout`: COLLIE_TIMEOUT.
RunOptions pulling_everything(const char* timeout) {
  RunOptions o = small_chunks();
  o.env.push_back({"COLLIE_P2P_PULL", "always"});
  o.env.push_back({"COLLIE_TIMEOUT", timeout});
  return o;
}

// A pulled message whose receive is not posted is left in the sender's memory
// for a short grace, then buffered (p2p.h). Rank 0's blocking send of tag 1 can
// only complete through that buffering: rank 1 receives tag 1 only after tag 2,
// which rank 0 sends after tag 1 completed. Without it this hangs until the deadline.
TEST(P2P, PulledMessageNobodyReceivesYetIsBufferedAfterItsGrace) {
  RunOptions o = pulling_everything("20");
  run_ranks(
      2,
      [](int rank) {
        const int64_t count = 70001;
        if (rank == 0) {
          send(make_tensor({count}, DType::Float32,
                           [](int64_t i) { return pattern_value(DType::Float32, 1, i); }),
               1, WORLD, 1);
          send(Tensor::full({4}, 2.0), 1, WORLD, 2);
        } else {
          Tensor second = recv(Tensor::zeros({4}), 0, WORLD, 2);
          Tensor first = recv(Tensor::zeros({count}), 0, WORLD, 1);
          check_tensor(
              second, DType::Float32, {4}, [](int64_t) { return 2.0; }, "tag 2");
          check_tensor(
              first, DType::Float32, {count},
              [](int64_t i) { return pattern_value(DType::Float32, 1, i); }, "tag 1, buffered");
        }
      },
      o);
}

// One round of crossing blocking sends between ranks 0 and 1 (pulled messages of
// 70001 floats), rank 0 starting `delay` later; checks what each received.
void crossing_round(int rank, int round, std::chrono::microseconds delay) {
  const int64_t count = 70001;
  const int peer = 1 - rank;
  if (rank == 0) std::this_thread::sleep_for(delay);
  send(make_tensor({count}, DType::Float32,
                   [&](int64_t i) { return pattern_value(DType::Float32, 10 * round + rank, i); }),
       peer);
  Tensor y = recv(Tensor::zeros({count}), peer);
  check_tensor(
      y, DType::Float32, {count},
      [&](int64_t i) { return pattern_value(DType::Float32, 10 * round + peer, i); },
      "round " + std::to_string(round));
}

// Both ranks send first (blocking), then receive: with pulled messages each send
// completes only once the other rank reads it, which its grace guarantees.
TEST(P2P, CrossingBlockingPulledSendsComplete) {
  run_ranks(
      2,
      [](int rank) {
        for (int round = 0; round < 3; ++round) crossing_round(rank, round, {});
      },
      pulling_everything("20"));
}

// As above, but rank 0 starts its send a little after rank 1's message arrived
// and was deferred: once rank 0 sends to rank 1 that message's grace is the
// short crossing one (p2p.h), whichever order the two meet in; the values are
// the same.
TEST(P2P, CrossingPulledSendsWhereOneMessageWasAlreadyDeferred) {
  run_ranks(
      2,
      [](int rank) {
        for (int round = 0; round < 10; ++round) {
          barrier();
          crossing_round(rank, round, std::chrono::microseconds(100 * round));
        }
      },
      pulling_everything("20"));
}

// A rank that releases collie while a pulled message to it is deferred (it never
// posted the receive) reads the message before its engine stops (p2p.h), so the
// sender's wait completes instead of failing: rank 1 takes tag 6, sent after the
// pulled tag 5, and releases at once, often inside tag 5's grace (70 us, what
// buffering its 280 KB takes; when not, the grace reads it first). Eight
// rounds, each in a fresh init(): without the read at release about a third of
// the rounds failed.
TEST(P2P, ReleaseReadsDeferredPulledMessagesSoTheirSendsComplete) {
  RunOptions o = pulling_everything("5");
  run_ranks(
      2,
      [](int rank) {
        const int64_t count = 70001;  // pulled: larger than the 4 KiB ring
        for (int round = 0; round < 8; ++round) {
          if (round > 0) {
            release();
            init();
          }
          if (rank == 0) {
            CommHandle never_received = isend(Tensor::full({count}, 5.0), 1, WORLD, 5);
            send(Tensor::full({4}, 6.0 + round), 1, WORLD, 6);
            never_received.wait();  // CommError if rank 1 left it unread
            RCHECK(never_received.is_completed());
          } else {
            Tensor y = recv(Tensor::zeros({4}), 0, WORLD, 6);
            check_tensor(
                y, DType::Float32, {4}, [&](int64_t) { return 6.0 + round; },
                "tag 6, round " + std::to_string(round));
          }
        }
      },
      o);
}

// State letter of a process ('T': stopped), from /proc/<pid>/stat.
char process_state(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

// A pulled send whose receiver does not run (stopped) times out; the sender may
// reuse that memory from then on, so the receiver, once resumed, must refuse the
// message (CommError) rather than read it, and the pair must carry on.
TEST(P2P, TimedOutPulledSendIsNeverReadLater) {
  RunOptions o = pulling_everything("1");
  run_ranks(2, [](int rank) {
    const int64_t count = 20000;
    if (rank == 0) {
      send(Tensor::full({1}, static_cast<double>(getpid()), DType::Int64), 1);
      raise(SIGSTOP);  // rank 1 resumes us once its send has timed out
      RCHECK_THROWS(recv(Tensor::zeros({count}), 1, WORLD, 7), collie::CommError,
                    "gave up on this message");
      Tensor y = recv(Tensor::zeros({count}), 1, WORLD, 8);
      check_tensor(y, DType::Float32, {count}, [](int64_t) { return 8.0; }, "after the refusal");
    } else {
      const auto peer = static_cast<pid_t>(recv(Tensor::zeros({1}, DType::Int64), 0).item(0));
      while (process_state(peer) != 'T') std::this_thread::sleep_for(std::chrono::milliseconds(1));
      RCHECK_THROWS(send(Tensor::full({count}, 7.0), 0, WORLD, 7), collie::TimeoutError,
                    "did not read the message");
      kill(peer, SIGCONT);
      send(Tensor::full({count}, 8.0), 0, WORLD, 8);
    }
  }, o);
}

// Messages from shared tensors of 8 KiB or more, or that do not fit the (4 KiB)
// ring, are pulled from the sender's arena (p2p.h) unless COLLIE_P2P_PULL=never,
// with CMA off (COLLIE_CMA=0) so that no other pull is possible: every result is
// the same as streamed (a pulled message nobody receives yet is left in the
// arena, then buffered).
using ArenaPullCase = std::tuple<int, std::string>;
class P2PArenaPull : public ::testing::TestWithParam<ArenaPullCase> {};

TEST_P(P2PArenaPull, SharedTensorsArriveAsSentPulledOrStreamed) {
  const auto [n, policy] = GetParam();
  RunOptions o = small_chunks();
  o.env.push_back({"COLLIE_P2P_PULL", policy});
  o.env.push_back({"COLLIE_CMA", "0"});
  run_ranks(
      n, [n = n](int rank) { pulled_or_streamed_exchanges(rank, n, shared_copy); }, o);
}

INSTANTIATE_TEST_SUITE_P(Policies, P2PArenaPull,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values("auto", "always", "never")),
                         [](const ::testing::TestParamInfo<ArenaPullCase>& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

// As TimedOutPulledSendIsNeverReadLater, for a message pulled from the shared
// arena with CMA off: only a pulled message gives these errors, so this also
// shows that a shared tensor's message was pulled where CMA is unavailable.
TEST(P2P, TimedOutArenaPulledSendIsNeverReadLater) {
  RunOptions o = pulling_everything("1");
  o.env.push_back({"COLLIE_CMA", "0"});
  run_ranks(
      2,
      [](int rank) {
        const int64_t count = 20000;
        if (rank == 0) {
          send(Tensor::full({1}, static_cast<double>(getpid()), DType::Int64), 1);
          raise(SIGSTOP);  // rank 1 resumes us once its send has timed out
          RCHECK_THROWS(recv(Tensor::zeros({count}), 1, WORLD, 7), collie::CommError,
                        "gave up on this message");
          Tensor y = recv(Tensor::zeros({count}), 1, WORLD, 8);
          check_tensor(
              y, DType::Float32, {count}, [](int64_t) { return 8.0; }, "after the refusal");
        } else {
          const auto peer = static_cast<pid_t>(recv(Tensor::zeros({1}, DType::Int64), 0).item(0));
          Tensor seven = shared_copy(Tensor::full({count}, 7.0));
          while (process_state(peer) != 'T')
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          RCHECK_THROWS(send(seven, 0, WORLD, 7), collie::TimeoutError, "did not read the message");
          kill(peer, SIGCONT);
          send(shared_copy(Tensor::full({count}, 8.0)), 0, WORLD, 8);
        }
      },
      o);
}

}  // namespace
}  // namespace collie::testing
