// The rooted collectives: reduce, broadcast, scatter_tensor, gather_into_tensor.
// Roots are WORLD ranks (rotated through every rank, so roots != 0 are covered);
// non-roots of reduce/gather get a shape-[1] tensor of zeros; sub-groups with unsorted
// rank lists translate world roots through the creation order.
#include <algorithm>
#include <cstring>
#include <thread>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

void check_placeholder(const Tensor& t, DType dt, const std::string& what) {
  check_tensor(t, dt, {1}, [](int64_t) { return 0.0; }, what + " (non-root placeholder)");
}

class RootedWorld : public ::testing::TestWithParam<int> {};

TEST_P(RootedWorld, ReduceEveryDtypeCountOpAndRoot) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const auto world = iota_ranks(n);
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t count : element_counts()) {
        for (ReduceOp op : all_reduce_ops()) {
          const int dst = (index++) % n;
          const std::string what = "reduce to " + std::to_string(dst) + " " + case_name(dt, count, false) +
                                   " op=" + std::string(reduce_op_name(op));
          soft.check(what, [&] {
            Tensor x = make_tensor({count}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
            Tensor y = reduce(x, dst, op);
            if (rank == dst) {
              check_tensor(y, dt, {count}, [&](int64_t i) { return expected_reduction(dt, op, world, i); }, what);
            } else {
              check_placeholder(y, dt, what);
            }
          });
        }
      }
    }
    soft.finish();
  }, small_chunks());
}

TEST_P(RootedWorld, BroadcastEveryDtypeCountAndRoot) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t count : element_counts()) {
        const int src = (index++) % n;
        const std::string what = "broadcast from " + std::to_string(src) + " " + case_name(dt, count, false);
        soft.check(what, [&] {
          // Every rank passes its own data; only src's arrives.
          Tensor x = make_tensor({count, 3}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y = broadcast(x, src);
          check_tensor(y, dt, {count, 3}, [&](int64_t i) { return pattern_value(dt, src, i); }, what);
          check_tensor(x, dt, {count, 3}, [&](int64_t i) { return pattern_value(dt, rank, i); },
                       what + " (input afterwards)");
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

TEST_P(RootedWorld, ScatterEveryDtypeCountAndRoot) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t rows_per_rank : element_counts()) {
        const int src = (index++) % n;
        const std::string what = "scatter_tensor from " + std::to_string(src) + " " +
                                 case_name(dt, rows_per_rank, false);
        soft.check(what, [&] {
          // Non-src ranks pass the same shape with other values (ignored).
          Tensor x = make_tensor({rows_per_rank * n, 2}, dt,
                                 [&](int64_t i) { return pattern_value(dt, rank == src ? 1000 : rank, i); });
          Tensor y = scatter_tensor(x, src);
          const int64_t part = rows_per_rank * 2;
          check_tensor(y, dt, {rows_per_rank, 2},
                       [&](int64_t i) { return pattern_value(dt, 1000, rank * part + i); }, what);
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

TEST_P(RootedWorld, GatherEveryDtypeCountAndRoot) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t rows : element_counts()) {
        const int dst = (index++ + 1) % n;
        const std::string what = "gather_into_tensor to " + std::to_string(dst) + " " + case_name(dt, rows, false);
        soft.check(what, [&] {
          Tensor x = make_tensor({rows, 2}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y = gather_into_tensor(x, dst);
          if (rank == dst) {
            const int64_t block = rows * 2;
            check_tensor(y, dt, {n * rows, 2}, [&](int64_t i) {
              return pattern_value(dt, static_cast<int>(i / block), i % block);
            }, what);
          } else {
            check_placeholder(y, dt, what);
          }
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, RootedWorld, ::testing::Values(1, 2, 3, 4), world_size_name);

// Group [3, 1] and [2, 0, 3]: roots are world ranks, translated by creation order.
TEST(RootedOps, UnsortedSubGroupsTranslateWorldRoots) {
  run_ranks(4, [](int rank) {
    const std::vector<int> pair = {3, 1};
    const std::vector<int> trio = {2, 0, 3};
    if (index_in(pair, rank) >= 0) create_group("root_pair", pair);
    if (index_in(trio, rank) >= 0) create_group("root_trio", trio);
    for (const auto& [name, ranks] : {std::pair{"root_pair", pair}, std::pair{"root_trio", trio}}) {
      const int g = index_in(ranks, rank);
      if (g < 0) continue;
      const int64_t size = static_cast<int64_t>(ranks.size());
      for (int root : ranks) {
        for (DType dt : {DType::Float32, DType::Int8, DType::Bool, DType::BFloat16}) {
          const std::string tag = std::string(" in ") + name + " root " + std::to_string(root) + " " +
                                  std::string(dtype_name(dt));
          // reduce
          Tensor x = make_tensor({9}, dt, [&](int64_t i) { return rank_value(dt, ReduceOp::MAX, rank, i); });
          Tensor r = reduce(x, root, ReduceOp::MAX, name);
          if (rank == root) {
            check_tensor(r, dt, {9}, [&](int64_t i) { return expected_reduction(dt, ReduceOp::MAX, ranks, i); },
                         "reduce" + tag);
          } else {
            check_placeholder(r, dt, "reduce" + tag);
          }
          // broadcast
          Tensor b = broadcast(make_tensor({4}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); }),
                               root, name);
          check_tensor(b, dt, {4}, [&](int64_t i) { return pattern_value(dt, root, i); }, "broadcast" + tag);
          // scatter: group rank g gets part g of root's tensor
          Tensor s = scatter_tensor(
              make_tensor({size * 2}, dt, [&](int64_t i) { return pattern_value(dt, rank == root ? 77 : rank, i); }),
              root, name);
          check_tensor(s, dt, {2}, [&](int64_t i) { return pattern_value(dt, 77, g * 2 + i); },
                       "scatter_tensor" + tag);
          // gather: blocks in group-rank order
          Tensor t = gather_into_tensor(make_tensor({2}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); }),
                                        root, name);
          if (rank == root) {
            check_tensor(t, dt, {size * 2}, [&](int64_t i) {
              return pattern_value(dt, ranks[static_cast<size_t>(i / 2)], i % 2);
            }, "gather_into_tensor" + tag);
          } else {
            check_placeholder(t, dt, "gather_into_tensor" + tag);
          }
        }
      }
    }
  });
}

// Messages much larger than any default staging slot, default engine settings.
TEST(RootedOps, LargeMessagesDefaultSlots) {
  run_ranks(3, [](int rank) {
    const int64_t count = 2 * 1024 * 1024 + 3;  // 8 MiB of int32
    Tensor b = broadcast(make_tensor({count}, DType::Int32, [&](int64_t i) { return pattern_value(DType::Int32, rank, i); }),
                         1);
    check_tensor(b, DType::Int32, {count}, [](int64_t i) { return pattern_value(DType::Int32, 1, i); }, "broadcast 8 MiB");
    Tensor r = reduce(make_tensor({count}, DType::Int32, [&](int64_t i) { return rank_value(DType::Int32, ReduceOp::SUM, rank, i); }),
                      2);
    if (rank == 2) {
      check_tensor(r, DType::Int32, {count},
                   [](int64_t i) { return expected_reduction(DType::Int32, ReduceOp::SUM, {0, 1, 2}, i); }, "reduce 8 MiB");
    }
    auto [g, h] = all_gather_into_tensor(Tensor::full({count}, rank, DType::Int32));
    check_tensor(g, DType::Int32, {3 * count}, [count](int64_t i) { return double(i / count); }, "all_gather 8 MiB each");
  });
}

// The docstring examples' shapes: scatter of arange(8).reshape(4, 2) from rank 0.
TEST(RootedOps, ScatterAndGatherDocstringShapes) {
  run_ranks(2, [](int rank) {
    Tensor input = Tensor::arange(int64_t{8}, DType::Float32).reshape({4, 2});
    Tensor out = scatter_tensor(input, 0);
    check_tensor(out, DType::Float32, {2, 2}, [&](int64_t i) { return 4.0 * rank + i; }, "scatter_tensor");
    Tensor g = gather_into_tensor(Tensor::arange(int64_t{4}, DType::Float32).reshape({2, 2}), 0);
    if (rank == 0) {
      check_tensor(g, DType::Float32, {4, 2}, [](int64_t i) { return double(i % 4); }, "gather_into_tensor");
    } else {
      check_placeholder(g, DType::Float32, "gather_into_tensor");
    }
  });
}

// A non-root's placeholder is a zero of its own in every result, though each
// thread hands the one of its dtype nobody holds any more out again: one
// written to and dropped comes back zeroed, every byte, and one still held is
// neither handed out again nor zeroed by a later call. reduce and
// gather_into_tensor share the placeholder of a dtype.
TEST(RootedOps, EveryNonRootPlaceholderIsAZeroOfItsOwn) {
  run_ranks(3, [](int rank) {
    const int root = 1;
    for (DType dt : {DType::Int8, DType::Float64, DType::Float32}) {
      for (int round = 0; round < 3; ++round) {
        Tensor x = make_tensor({2}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
        Tensor r = reduce(x, root);
        Tensor g = gather_into_tensor(x, root);
        if (rank == root) continue;
        check_placeholder(r, dt, "reduce round " + std::to_string(round));
        check_placeholder(g, dt, "gather_into_tensor round " + std::to_string(round));
        RCHECK(r.data_ptr() != g.data_ptr());         // both held: two placeholders
        std::memset(r.data_ptr(), 0x5a, r.nbytes());  // written to, then dropped
        std::memset(g.data_ptr(), 0x5a, g.nbytes());
      }
    }
    Tensor held = reduce(Tensor::full({3}, rank, DType::Float32), root);
    if (rank != root) std::memset(held.data_ptr(), 0x5a, held.nbytes());
    Tensor later = gather_into_tensor(Tensor::full({3}, rank, DType::Float32), root);
    if (rank == root) return;
    RCHECK(later.data_ptr() != held.data_ptr());
    check_placeholder(later, DType::Float32, "gather_into_tensor after a held reduce");
    for (size_t b = 0; b < held.nbytes(); ++b) {
      RCHECK_EQ(static_cast<const unsigned char*>(held.data_ptr())[b], 0x5a);  // not zeroed
    }
  });
}

TEST(RootedOps, NonContiguousInputs) {
  run_ranks(2, [](int rank) {
    Tensor base = make_tensor({2, 4}, DType::Float32, [&](int64_t i) { return 10.0 * rank + i; });
    Tensor view = base.transpose(0, 1);  // [4, 2]: view(a, b) = 10 rank + 4b + a
    auto expected_view = [](int r, int64_t k) { return 10.0 * r + 4 * (k % 2) + k / 2; };
    Tensor b = broadcast(view, 1);
    check_tensor(b, DType::Float32, {4, 2}, [&](int64_t k) { return expected_view(1, k); }, "broadcast view");
    Tensor s = scatter_tensor(view, 1);
    check_tensor(s, DType::Float32, {2, 2}, [&](int64_t k) { return expected_view(1, rank * 4 + k); },
                 "scatter view");
    Tensor g = gather_into_tensor(view, 0);
    if (rank == 0) {
      check_tensor(g, DType::Float32, {8, 2}, [&](int64_t k) { return expected_view(int(k / 8), k % 8); },
                   "gather view");
    }
    Tensor r = reduce(view, 1);
    if (rank == 1) {
      check_tensor(r, DType::Float32, {4, 2}, [&](int64_t k) { return expected_view(0, k) + expected_view(1, k); },
                   "reduce view");
    }
  });
}

TEST(RootedOps, RootNotInGroupIsRuntimeError) {
  run_ranks(4, [](int rank) {
    SoftChecks soft;
    const std::vector<int> pair = {3, 1};
    Tensor x = Tensor::ones({4});
    // Outside the world.
    SOFT_THROWS(soft, reduce(x, 4), collie::RuntimeError, "reduce");
    SOFT_THROWS(soft, reduce(x, -1), collie::RuntimeError, "reduce");
    SOFT_THROWS(soft, broadcast(x, 7), collie::RuntimeError, "broadcast");
    SOFT_THROWS(soft, scatter_tensor(x, 9), collie::RuntimeError, "scatter_tensor");
    SOFT_THROWS(soft, gather_into_tensor(x, 5), collie::RuntimeError, "gather_into_tensor");
    if (index_in(pair, rank) < 0) return soft.finish();
    create_group("root_err_pair", pair);
    // World ranks 0 and 2 are not members of [3, 1] (group ranks 0 and 1 are not world ranks).
    SOFT_THROWS(soft, reduce(x, 0, ReduceOp::SUM, "root_err_pair"), collie::RuntimeError, "reduce");
    SOFT_THROWS(soft, broadcast(x, 2, "root_err_pair"), collie::RuntimeError, "broadcast");
    SOFT_THROWS(soft, scatter_tensor(Tensor::ones({2}), 0, "root_err_pair"), collie::RuntimeError,
                      "scatter_tensor");
    SOFT_THROWS(soft, gather_into_tensor(x, 2, "root_err_pair"), collie::RuntimeError,
                      "gather_into_tensor");
    // The group still works.
    Tensor y = broadcast(Tensor::full({2}, rank), 3, "root_err_pair");
    check_tensor(y, DType::Float32, {2}, [](int64_t) { return 3.0; }, "broadcast after errors");
    soft.finish();
  });
}

TEST(RootedOps, ScatterShapeErrors) {
  run_ranks(2, [](int) {
    SoftChecks soft;
    SOFT_THROWS(soft, scatter_tensor(Tensor::scalar(1.0), 0), collie::ValueError, "scatter_tensor");
    SOFT_THROWS(soft, scatter_tensor(Tensor::ones({3, 2}), 1), collie::ValueError, "scatter_tensor");
    SOFT_THROWS_DERIVED(soft, broadcast(Tensor::ones({2}), 0, "no_such_group"), collie::Error,
                              "broadcast", "no_such_group");
    SOFT_THROWS_DERIVED(soft, reduce(Tensor::ones({2}), 0, ReduceOp::SUM, "no_such_group"), collie::Error,
                              "reduce", "no_such_group");
    soft.finish();
    Tensor y = scatter_tensor(Tensor::ones({4, 2}), 1);
    check_tensor(y, DType::Float32, {2, 2}, [](int64_t) { return 1.0; }, "scatter after errors");
  });
}

// With more ranks than CPUs a reduce takes a slot's worth per step (every step
// waits for every rank to be scheduled) instead of the small pipelined steps,
// and says so in its fingerprint. Shown by a mismatch: rank 0 passes a shared
// tensor, and the message names each rank's form. COLLIE_DEBUG=detail makes
// every rank raise inside the call (a reduce's non-roots wait for nobody).
TEST(RootedOps, ReduceTakesSlotSizedStepsWithMoreRanksThanCpus) {
  const int n = 4;
  const bool oversubscribed =
      static_cast<unsigned>(n) > std::max(1u, std::thread::hardware_concurrency());
  RunOptions detail;
  detail.env = {{"COLLIE_DEBUG", "detail"}};
  run_ranks(
      n,
      [&](int rank) {
        const int64_t count = (64 << 10) / 4;
        Tensor x = rank == 0 ? empty_shared({count}) : Tensor::ones({count});
        if (rank == 0) x.copy_from(Tensor::ones({count}));
        try {
          reduce(x, 3);
          RCHECK(false) << "mixing shared and private tensors must fail";
        } catch (const CommError& e) {
          const std::string m = e.what();
          const std::string call = "reduce(sum) float32 x" + std::to_string(count) + " root 3";
          RCHECK(contains(m, "rank 0: " + call)) << m;
          for (int r = 1; r < n; ++r) {
            const size_t at = m.find("rank " + std::to_string(r) + ": " + call);
            RCHECK(at != std::string::npos) << m;
            const size_t end = m.find("; rank ", at);
            const std::string part = m.substr(at, end == std::string::npos ? end : end - at);
            RCHECK_EQ(contains(part, "(a slot per step: more ranks than CPUs)"), oversubscribed)
                << m;
          }
        }
      },
      detail);
}

}  // namespace
}  // namespace collie::testing
