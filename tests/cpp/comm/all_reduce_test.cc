// all_reduce: every dtype x element count x reduce op x world size, sync and async,
// sub-groups with unsorted rank lists, shapes, non-contiguous inputs, handles, errors.
#include <algorithm>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

class AllReduceWorld : public ::testing::TestWithParam<int> {};

// Every dtype x {0, 1, 37, 5000} elements x {sum, prod, min, max}, with 4 KiB staging
// slots so that 5000 elements are reduced in many chunks; every other case async.
TEST_P(AllReduceWorld, EveryDtypeCountAndOp) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const auto world = iota_ranks(n);
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t count : element_counts()) {
        for (ReduceOp op : all_reduce_ops()) {
          const bool async = (index++ % 2) == 1;
          const std::string what =
              "all_reduce " + case_name(dt, count, async) + " op=" + std::string(reduce_op_name(op));
          soft.check(what, [&] {
            Tensor x = make_tensor({count}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
            Tensor y = finish(all_reduce(x, op, WORLD, async), async, what);
            check_tensor(y, dt, {count}, [&](int64_t i) { return expected_reduction(dt, op, world, i); },
                         what);
            // The input is never modified.
            check_tensor(x, dt, {count}, [&](int64_t i) { return rank_value(dt, op, rank, i); },
                         what + " (input afterwards)");
          });
        }
      }
    }
    soft.finish();
  }, small_chunks());
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AllReduceWorld, ::testing::Values(1, 2, 3, 4),
                         world_size_name);

// A message much larger than any default staging slot, default engine settings.
TEST(AllReduce, LargeFloat32DefaultSlots) {
  run_ranks(3, [](int rank) {
    const int64_t count = 3 * 1024 * 1024 + 5;  // 12 MiB of float32
    Tensor x = make_tensor({count}, DType::Float32,
                           [&](int64_t i) { return rank_value(DType::Float32, ReduceOp::SUM, rank, i); });
    auto [y, h] = all_reduce(x);
    check_tensor(y, DType::Float32, {count},
                 [&](int64_t i) { return expected_reduction(DType::Float32, ReduceOp::SUM, {0, 1, 2}, i); },
                 "all_reduce 12 MiB");
  });
}

// Output shape equals input shape, for multi-dimensional and 0-d tensors.
TEST(AllReduce, ShapesAreKept) {
  run_ranks(2, [](int rank) {
    Tensor x = make_tensor({3, 5, 2}, DType::Int32, [&](int64_t i) { return i + rank; });
    auto [y, h] = all_reduce(x);
    check_tensor(y, DType::Int32, {3, 5, 2}, [](int64_t i) { return 2 * i + 1; }, "all_reduce [3,5,2]");

    Tensor s = Tensor::scalar(rank + 1.5, DType::Float64);
    auto [z, h2] = all_reduce(s, ReduceOp::MAX);
    check_tensor(z, DType::Float64, {}, [](int64_t) { return 2.5; }, "all_reduce 0-d");

    Tensor e = Tensor::zeros({0, 4}, DType::Float16);
    auto [w, h3] = all_reduce(e);
    check_tensor(w, DType::Float16, {0, 4}, [](int64_t) { return 0.0; }, "all_reduce [0,4]");
  });
}

// A transposed (non-contiguous) view is reduced as its logical elements.
TEST(AllReduce, NonContiguousInput) {
  run_ranks(3, [](int rank) {
    for (DType dt : {DType::Float32, DType::Int8, DType::BFloat16}) {
      // base [4, 6]: base(a, b) = rank_value(.., 6a + b); view = base^T, shape [6, 4].
      Tensor base = make_tensor({4, 6}, dt, [&](int64_t i) { return rank_value(dt, ReduceOp::SUM, rank, i); });
      Tensor view = base.transpose(0, 1);
      RCHECK(!view.is_contiguous());
      auto [y, h] = all_reduce(view);
      check_tensor(y, dt, {6, 4}, [&](int64_t k) {
        int64_t row = k / 4, col = k % 4;  // y[row, col] = base[col, row]
        return expected_reduction(dt, ReduceOp::SUM, {0, 1, 2}, col * 6 + row);
      }, "all_reduce of a transposed view");
    }
  });
}

// Sub-groups whose rank lists are unsorted; only members take part, and the result is
// the reduction over exactly the members.
TEST(AllReduce, UnsortedSubGroups) {
  run_ranks(4, [](int rank) {
    SoftChecks soft;
    const std::vector<int> pair = {3, 1};
    const std::vector<int> trio = {2, 0, 3};
    if (index_in(pair, rank) >= 0) create_group("ar_pair", pair);
    if (index_in(trio, rank) >= 0) create_group("ar_trio", trio);
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (ReduceOp op : all_reduce_ops()) {
        const bool async = (index++ % 3) == 0;
        for (const auto& [name, ranks] : {std::pair{"ar_pair", pair}, std::pair{"ar_trio", trio}}) {
          if (index_in(ranks, rank) < 0) continue;
          const std::string what = std::string("all_reduce in ") + name + " " +
                                   case_name(dt, 37, async) + " op=" + std::string(reduce_op_name(op));
          soft.check(what, [&] {
            Tensor x = make_tensor({37}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
            Tensor y = finish(all_reduce(x, op, name, async), async, what);
            check_tensor(y, dt, {37}, [&](int64_t i) { return expected_reduction(dt, op, ranks, i); }, what);
          });
        }
      }
    }
    soft.finish();
  }, small_chunks());
}

// float16 and bfloat16 accumulate in float32 and round once: 2048 + 1 + 1 is 2050 in
// float16 (a float16 running sum would stay at 2048), 256 + 1 + 1 is 258 in bfloat16, and
// 40000 + 40000 - 40000 does not overflow float16 (max 65504) on the way.
TEST(AllReduce, HalfPrecisionAccumulatesInFloat32) {
  run_ranks(3, [](int rank) {
    SoftChecks soft;
    struct Case {
      DType dtype;
      double values[3];
      double sum;
    };
    const Case cases[] = {{DType::Float16, {2048, 1, 1}, 2050},
                          {DType::BFloat16, {256, 1, 1}, 258},
                          {DType::Float16, {40000, 40000, -40000}, 40000},
                          {DType::BFloat16, {1, 1, 256}, 258}};
    for (const Case& c : cases) {
      const std::string what = "all_reduce " + std::string(dtype_name(c.dtype)) + " " +
                               std::to_string(c.values[0]) + " + " + std::to_string(c.values[1]) + " + " +
                               std::to_string(c.values[2]);
      soft.check(what, [&] {
        Tensor x = Tensor::full({5}, c.values[rank], c.dtype);
        auto [y, h] = all_reduce(x);
        check_tensor(y, c.dtype, {5}, [&](int64_t) { return c.sum; }, what);
        Tensor r = reduce(x, 2);
        if (rank == 2) check_tensor(r, c.dtype, {5}, [&](int64_t) { return c.sum; }, "reduce: " + what);
      });
    }
    soft.finish();
  });
}

// Non-integer floating-point sums are bitwise identical on every rank.
TEST(AllReduce, ResultsAreBitwiseIdenticalOnEveryRank) {
  run_ranks(4, [](int rank) {
    SoftChecks soft;
    for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
      soft.check(dtype_name(dt), [&] {
        const int64_t count = 3001;
        Tensor x = make_tensor({count}, dt, [&](int64_t i) { return 0.1 * (i % 97 + 1) / (rank + 3); });
        auto [y, h] = all_reduce(x);
        // Gather every rank's result as raw bytes (uint8) and compare with this rank's.
        Tensor bytes = Tensor::from_blob(y.data_ptr(), {static_cast<int64_t>(y.nbytes())}, DType::UInt8);
        auto [all, h2] = all_gather_into_tensor(bytes);
        const uint8_t* mine = bytes.data<uint8_t>();
        const uint8_t* every = all.data<uint8_t>();
        for (int r = 0; r < 4; ++r) {
          RCHECK(std::equal(mine, mine + y.nbytes(), every + r * static_cast<int64_t>(y.nbytes())))
              << "rank " << r << "'s " << dtype_name(dt) << " result differs bitwise from rank " << rank << "'s";
        }
      });
    }
    soft.finish();
  }, small_chunks());
}

// Handle semantics: empty when synchronous; wait() may be called repeatedly; wait_for.
TEST(AllReduce, HandleSemantics) {
  run_ranks(2, [](int rank) {
    CommHandle empty;
    RCHECK(!empty);
    empty.wait();  // returns at once

    Tensor x = Tensor::full({8}, rank + 1.0);
    auto [y, h] = all_reduce(x, ReduceOp::SUM, WORLD, /*async_op=*/true);
    RCHECK(static_cast<bool>(h));
    RCHECK(h.wait_for(60.0)) << "wait_for(60) did not complete";
    RCHECK(h.is_completed());
    h.wait();
    h.wait();
    check_tensor(y, DType::Float32, {8}, [](int64_t) { return 3.0; }, "async all_reduce");
  });
}

// 100 asynchronous all_reduces in flight at once, then waited for (in reverse order)
// and each checked.
TEST(AllReduce, HundredInFlight) {
  run_ranks(4, [](int rank) {
    std::vector<std::pair<Tensor, CommHandle>> inflight;
    for (int k = 0; k < 100; ++k) {
      DType dt = all_dtypes()[static_cast<size_t>(k) % all_dtypes().size()];
      Tensor x = make_tensor({17 + k}, dt, [&](int64_t i) { return rank_value(dt, ReduceOp::SUM, rank, i + k); });
      inflight.push_back(all_reduce(x, ReduceOp::SUM, WORLD, true));
    }
    for (int k = 99; k >= 0; --k) {
      DType dt = all_dtypes()[static_cast<size_t>(k) % all_dtypes().size()];
      inflight[static_cast<size_t>(k)].second.wait();
      check_tensor(inflight[static_cast<size_t>(k)].first, dt, {17 + k},
                   [&](int64_t i) { return expected_reduction(dt, ReduceOp::SUM, {0, 1, 2, 3}, i + k); },
                   "all_reduce #" + std::to_string(k) + " of 100 in flight");
    }
  });
}

TEST(AllReduce, Errors) {
  run_ranks(2, [](int) {
    SoftChecks soft;
    Tensor x = Tensor::ones({4});
    SOFT_THROWS_DERIVED(soft, all_reduce(x, ReduceOp::SUM, "no_such_group"), collie::Error,
                              "all_reduce", "no_such_group");
    SOFT_THROWS(soft, parse_reduce_op("avg"), collie::TypeError, "all_reduce");
    SOFT_THROWS(soft, parse_reduce_op("SUM "), collie::TypeError);
    SOFT_THROWS(soft, parse_reduce_op("mean", "reduce"), collie::TypeError, "reduce");
    RCHECK(parse_reduce_op("sum") == ReduceOp::SUM);
    RCHECK(parse_reduce_op("prod") == ReduceOp::PROD);
    RCHECK(parse_reduce_op("min") == ReduceOp::MIN);
    RCHECK(parse_reduce_op("max") == ReduceOp::MAX);
    RCHECK_EQ(reduce_op_name(ReduceOp::SUM), std::string_view("sum"));
    RCHECK_EQ(reduce_op_name(ReduceOp::MAX), std::string_view("max"));
    soft.finish();
    // The world still works after argument errors (they must not break the group).
    auto [y, h] = all_reduce(x);
    check_tensor(y, DType::Float32, {4}, [](int64_t) { return 2.0; }, "all_reduce after errors");
  });
}

}  // namespace
}  // namespace collie::testing
