// The communication ops added for the gradient rules (collie/comm_ext.h): MindSpore's
// NeighborExchangeV2 docstring example, argument errors, edge cases (no rows anywhere),
// and the row-sparse helpers. Their general forward semantics are checked against the
// single-process reference in adjoint_test.cc.
#include <gtest/gtest.h>

#include "ag_test_util.h"
#include "rank_runner.h"

namespace collie::testing {
namespace {

HaloSpec spec(std::vector<int> send_ids, std::vector<int64_t> send_lens, std::vector<int> recv_ids,
              std::vector<int64_t> recv_lens) {
  return {std::move(send_ids), std::move(send_lens), std::move(recv_ids), std::move(recv_lens)};
}

// MindSpore's example: rank 0 (ones) sends its last row down to rank 1 (twos), which sends
// its first row up; each output grows by the received row.
TEST(CommExt, NeighborExchangeV2DocstringExample) {
  run_ranks(2, [](int rank) {
    Tensor x = Tensor::full({1, 1, 2, 2}, rank + 1.0, DType::Float32);
    Tensor y;
    if (rank == 0) {
      y = neighbor_exchange_v2(x, spec({-1, -1, -1, -1, 1, -1, -1, -1}, {0, 1, 0, 0},
                                       {-1, -1, -1, -1, 1, -1, -1, -1}, {0, 1, 0, 0}));
      RCHECK_EQ(y.to_string(), std::string("[[[[1. 1.]\n   [1. 1.]\n   [2. 2.]]]]"));
    } else {
      y = neighbor_exchange_v2(x, spec({0, -1, -1, -1, -1, -1, -1, -1}, {1, 0, 0, 0},
                                       {0, -1, -1, -1, -1, -1, -1, -1}, {1, 0, 0, 0}));
      RCHECK_EQ(y.to_string(), std::string("[[[[1. 1.]\n   [2. 2.]\n   [2. 2.]]]]"));
    }
  });
}

TEST(CommExt, ArgumentErrors) {
  run_ranks(2, [](int rank) {
    const std::vector<int> none(8, -1);
    const std::vector<int64_t> zero(4, 0);
    Tensor x = Tensor::ones({1, 1, 2, 2});
    RCHECK_THROWS(neighbor_exchange_v2(Tensor::ones({2, 2}), spec(none, zero, none, zero)),
                  ValueError, "4-d");
    RCHECK_THROWS(neighbor_exchange_v2(x, spec({-1}, zero, none, zero)), ValueError, "8 entries");
    RCHECK_THROWS(neighbor_exchange_v2(x, spec({-2, -1, -1, -1, -1, -1, -1, -1}, zero, none, zero)),
                  ValueError, "below -1");
    RCHECK_THROWS(neighbor_exchange_v2(x, spec({1, 1, -1, -1, -1, -1, -1, -1}, zero, none, zero)),
                  ValueError, "repeats rank 1");
    RCHECK_THROWS(neighbor_exchange_v2(x, spec(none, {0, -1, 0, 0}, none, zero)), ValueError,
                  "negative");
    RCHECK_THROWS(neighbor_exchange_v2(x, spec(none, {3, 0, 0, 0}, none, zero)), ValueError,
                  "exceed");
    RCHECK_THROWS(neighbor_exchange({x}, {}, {}, {}), ValueError, "neighbor_exchange");
    RCHECK_THROWS(all_to_all(Tensor::ones({3, 2}), 0, 1), ValueError, "not divisible");
    RCHECK_THROWS(all_to_all(Tensor::ones({2, 2}), 2, 0), ValueError, "out of range");
    RCHECK_THROWS(all_to_all_v(Tensor::ones({3}), {1, 1}, {1, 1}), ValueError, "sums to 2");
    RCHECK_THROWS(all_to_all_v(Tensor::ones({3}), {3}, {3}), ValueError, "one entry per rank");
    RCHECK_THROWS(reduce_scatter_v(Tensor::ones({3, 1}), {1, 1}), ValueError, "sums to 2");
    RCHECK_THROWS(reduce_scatter_v(Tensor::ones({2, 1}, DType::Int32), {1, 1}), TypeError,
                  "floating");
    RCHECK_THROWS(all_gather_v(Tensor::scalar(1)), ValueError, "at least one dim");
    (void)rank;
  });
}

TEST(CommExt, UnevenGathersWithNoRowsAnywhere) {
  run_ranks(3, [](int rank) {
    std::vector<int64_t> rows;
    Tensor y = all_gather_v(Tensor::zeros({0, 3}, DType::Float64), WORLD, &rows);
    RCHECK_EQ(y.shape(), (Shape{0, 3}));
    RCHECK_EQ(rows, (std::vector<int64_t>{0, 0, 0}));
    Tensor z = all_gather_v(Tensor::full({rank, 2}, rank, DType::Float64));
    RCHECK_EQ(z.shape(), (Shape{3, 2}));  // 0 + 1 + 2 rows
    RCHECK_EQ(z.to_double_vector(), (std::vector<double>{1, 1, 2, 2, 2, 2}));
    Tensor s = reduce_scatter_v(Tensor::ones({3, 1}, DType::Float64), {0, 2, 1});
    RCHECK_EQ(s.shape(), (Shape{rank == 0 ? 0 : (rank == 1 ? 2 : 1), 1}));
    for (double v : s.to_double_vector()) RCHECK_EQ(v, 3.0);
  });
}

TEST(CommExt, RowTensorHelpers) {
  RowTensor rows{Tensor::from_vector(std::vector<int64_t>{3, 0, 3}),
                 Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2}),
                 {4, 2}};
  EXPECT_EQ(to_dense(rows).to_double_vector(), (std::vector<double>{3, 4, 0, 0, 0, 0, 6, 8}));
  RowTensor c = coalesce(rows);
  EXPECT_EQ(c.indices.to_double_vector(), (std::vector<double>{0, 3}));
  EXPECT_EQ(c.values.to_double_vector(), (std::vector<double>{3, 4, 6, 8}));
  EXPECT_EQ(c.indices.dtype(), DType::Int64);
  RowTensor bad{
      Tensor::from_vector(std::vector<int64_t>{4}), Tensor::ones({1, 2}, DType::Float64), {4, 2}};
  EXPECT_THROW(to_dense(bad), ValueError);
  RowTensor mismatched{Tensor::from_vector(std::vector<int64_t>{0, 1}),
                       Tensor::ones({1, 2}, DType::Float64),
                       {4, 2}};
  EXPECT_THROW(coalesce(mismatched), ValueError);
}

}  // namespace
}  // namespace collie::testing
