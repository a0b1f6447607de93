// reduce_scatter_tensor: reduce over the group, group rank r keeps rows
// [r*x1/N, (r+1)*x1/N). Every dtype x op x count, world sizes 1-4, sub-groups, async,
// and the ValueErrors for 0-d and indivisible inputs.
#include "comm_test_util.h"

namespace collie::testing {
namespace {

class ReduceScatterWorld : public ::testing::TestWithParam<int> {};

TEST_P(ReduceScatterWorld, EveryDtypeOpAndCount) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const auto world = iota_ranks(n);
    int index = 0;
    for (DType dt : all_dtypes()) {
      // Rows per rank: 0, 1, 37 and 5000 (rows of 1 element each).
      for (int64_t rows_per_rank : element_counts()) {
        for (ReduceOp op : all_reduce_ops()) {
          const bool async = (index++ % 2) == 1;
          const std::string what = "reduce_scatter_tensor " + case_name(dt, rows_per_rank, async) +
                                   " op=" + std::string(reduce_op_name(op));
          soft.check(what, [&] {
            const int64_t rows = rows_per_rank * n;
            Tensor x = make_tensor({rows}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
            Tensor y = finish(reduce_scatter_tensor(x, op, WORLD, async), async, what);
            check_tensor(y, dt, {rows_per_rank}, [&](int64_t i) {
              return expected_reduction(dt, op, world, rank * rows_per_rank + i);
            }, what);
          });
        }
      }
    }
    soft.finish();
  }, small_chunks());
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ReduceScatterWorld, ::testing::Values(1, 2, 3, 4),
                         world_size_name);

// Multi-dimensional rows: [N*2, 3, 2] -> [2, 3, 2].
TEST(ReduceScatter, MultiDimensionalRows) {
  run_ranks(3, [](int rank) {
    Tensor x = make_tensor({6, 3, 2}, DType::Float64, [&](int64_t i) { return i * (rank + 1); });
    auto [y, h] = reduce_scatter_tensor(x);
    check_tensor(y, DType::Float64, {2, 3, 2}, [&](int64_t i) { return 6.0 * (rank * 12 + i); },
                 "reduce_scatter [6,3,2]");
  });
}

// In group [2, 0, 3], group rank r keeps slice r: world rank 2 the first slice.
TEST(ReduceScatter, UnsortedSubGroup) {
  run_ranks(4, [](int rank) {
    SoftChecks soft;
    const std::vector<int> trio = {2, 0, 3};
    int g = index_in(trio, rank);
    if (g < 0) return;
    create_group("rs_trio", trio);
    for (DType dt : all_dtypes()) {
      for (ReduceOp op : all_reduce_ops()) {
        const std::string what = "reduce_scatter_tensor in [2,0,3] " + std::string(dtype_name(dt)) +
                                 " op=" + std::string(reduce_op_name(op));
        soft.check(what, [&] {
          Tensor x = make_tensor({3 * 7, 2}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
          auto [y, h] = reduce_scatter_tensor(x, op, "rs_trio");
          check_tensor(y, dt, {7, 2}, [&](int64_t i) { return expected_reduction(dt, op, trio, g * 14 + i); },
                       what);
        });
      }
    }
    soft.finish();
  });
}

TEST(ReduceScatter, NonContiguousInput) {
  run_ranks(2, [](int rank) {
    Tensor base = make_tensor({3, 4}, DType::Int32, [&](int64_t i) { return i + rank; });
    Tensor view = base.transpose(0, 1);  // [4, 3]: view(a, b) = 4b + a + rank
    auto [y, h] = reduce_scatter_tensor(view);
    check_tensor(y, DType::Int32, {2, 3}, [&](int64_t k) {
      int64_t a = rank * 2 + k / 3, b = k % 3;
      return 2.0 * (4 * b + a) + 1;
    }, "reduce_scatter of a transposed view");
  });
}

TEST(ReduceScatter, Errors) {
  run_ranks(3, [](int) {
    SoftChecks soft;
    SOFT_THROWS(soft, reduce_scatter_tensor(Tensor::ones({4})), collie::ValueError,
                      "reduce_scatter_tensor");
    SOFT_THROWS(soft, reduce_scatter_tensor(Tensor::ones({5, 2})), collie::ValueError,
                      "reduce_scatter_tensor");
    SOFT_THROWS(soft, reduce_scatter_tensor(Tensor::scalar(1.0)), collie::ValueError,
                      "reduce_scatter_tensor");
    SOFT_THROWS_DERIVED(soft, reduce_scatter_tensor(Tensor::ones({3}), ReduceOp::SUM, "no_such_group"),
                              collie::Error, "reduce_scatter_tensor", "no_such_group");
    soft.finish();
    // Still usable afterwards.
    auto [y, h] = reduce_scatter_tensor(Tensor::ones({3}));
    check_tensor(y, DType::Float32, {1}, [](int64_t) { return 3.0; }, "reduce_scatter after errors");
  });
}

}  // namespace
}  // namespace collie::testing
