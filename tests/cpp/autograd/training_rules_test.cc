// The rules that are not adjoints of a forward collective but training devices:
// mirror (data-parallel gradient sync), all_gather's mean_flag, all_reduce_invariant,
// virtual_div, the mini-step accumulators, and row-sparse gradients gathered with uneven
// sizes. Exact expected values; world sizes 1-4 in one forked job each.
#include <gtest/gtest.h>

#include "ag_test_util.h"
#include "rank_runner.h"

namespace collie::testing {
namespace {

namespace ag = collie::autograd;

class TrainingRules : public ::testing::TestWithParam<int> {};

// dy on rank r is r + 1 everywhere, so sums are n(n+1)/2.
Tensor rank_dy(int rank, const Shape& shape) {
  return Tensor::full(shape, rank + 1.0, DType::Float64);
}

TEST_P(TrainingRules, MirrorMeanFlagInvariantAndVirtualDiv) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const double s = n * (n + 1) / 2.0;
    Tensor x = Tensor::ones({2, 3}, DType::Float64), dy = rank_dy(rank, {2, 3});
    Tensor g = ag::get_bprop("_MirrorOperator", {})(x, x, dy);
    soft.check("mirror sum", [&] {
      check_close(g, Tensor::full({2, 3}, s, DType::Float64), "mirror");
    });
    Tensor gm = ag::get_bprop("mirror", {{"mean_flag", true}})(x, x, dy);
    soft.check("mirror mean", [&] {
      check_close(gm, Tensor::full({2, 3}, s / n, DType::Float64), "mirror mean");
    });
    // dev_num == 1: nothing to synchronise, dout passes (no collective on any rank).
    Tensor g1 = ag::get_bprop("mirror", {{"dev_num", int64_t{1}}, {"mean_flag", true}})(x, x, dy);
    soft.check("mirror dev_num 1", [&] { check_close(g1, dy, "mirror dev_num 1"); });
    // all_gather with mean_flag: the reduce-scattered cotangent divided by N.
    Tensor big = rank_dy(rank, {2 * n, 3});
    Tensor ga = ag::get_bprop("all_gather_into_tensor", {{"mean_flag", true}})(x, big, big);
    soft.check("all_gather mean_flag", [&] {
      check_close(ga, Tensor::full({2, 3}, s / n, DType::Float64), "mean_flag");
    });
    // all_reduce_invariant: identity backward.
    Tensor gi = ag::get_bprop("all_reduce_invariant", {})(x, x, dy);
    soft.check("all_reduce_invariant", [&] { check_close(gi, dy, "invariant"); });
    // virtual_div: dout / divisor; integer cotangents untouched.
    auto vd = ag::get_bprop("_VirtualDiv", {{"divisor", int64_t{4}}});
    soft.check("virtual_div", [&] {
      check_close(vd(x, x, dy), Tensor::full({2, 3}, (rank + 1.0) / 4, DType::Float64),
                  "virtual_div");
      Tensor ints = Tensor::full({2}, 8, DType::Int32);
      RCHECK(vd(ints, ints, ints).equal(ints));
    });
    soft.finish();
  });
}

TEST_P(TrainingRules, MiniStepAccumulatesThenReducesOnce) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const int k = 3;
    auto mirror = ag::get_bprop("_MirrorMiniStepOperator",
                                {{"accumulation_steps", int64_t{k}}, {"mean_flag", true}});
    auto sharded = ag::get_bprop("mini_step_all_gather", {{"accumulation_steps", int64_t{2}}});
    Tensor x = Tensor::ones({2}, DType::Float64);
    // Micro-batch m on rank r has dy = (m + 1) * (r + 1); the total over ranks and
    // micro-batches is 6 * n(n+1)/2, averaged over n ranks by mean_flag.
    Tensor total = Tensor::zeros({2}, DType::Float64);
    for (int m = 0; m < k; ++m) {
      Tensor dx = mirror(x, x, Tensor::full({2}, (m + 1.0) * (rank + 1), DType::Float64));
      if (m < k - 1)
        soft.check("mini-step zero before the last micro-batch",
                   [&] { check_close(dx, Tensor::zeros({2}, DType::Float64), "early"); });
      total = Tensor::from_vector(
          std::vector<double>{total.item(0) + dx.item(0), total.item(1) + dx.item(1)});
    }
    soft.check("mini-step total", [&] {
      check_close(total, Tensor::full({2}, 6.0 * (n + 1) / 2.0, DType::Float64), "total");
    });
    // The sharded form: a [1] shard gathered to [n]; two micro-batches, then one reduce_scatter.
    Tensor shard = Tensor::ones({1}, DType::Float64);
    Tensor d0 = sharded(shard, shard, Tensor::arange(0, n, 1, DType::Float64));
    Tensor d1 = sharded(shard, shard, Tensor::arange(0, n, 1, DType::Float64));
    soft.check("sharded mini-step", [&] {
      check_close(d0, Tensor::zeros({1}, DType::Float64), "first micro-batch");
      check_close(d1, Tensor::full({1}, 2.0 * n * rank, DType::Float64),
                  "reduce_scatter of the sum");
    });
    // The state resets: the next round starts from zero again.
    Tensor d2 = sharded(shard, shard, Tensor::arange(0, n, 1, DType::Float64));
    soft.check("sharded mini-step resets",
               [&] { check_close(d2, Tensor::zeros({1}, DType::Float64), "reset"); });
    Tensor d3 = sharded(shard, shard, Tensor::zeros({n}, DType::Float64));
    soft.check("sharded mini-step second round", [&] {
      check_close(d3, Tensor::full({1}, 1.0 * n * rank, DType::Float64), "second");
    });
    soft.finish();
  });
}

// Rank r holds r row-gradients (rank 0 none): rows r, r, 0 ... with a duplicate, so nnz
// differs per rank and duplicates must add. MindSpore's AllGather path needs equal nnz.
TEST_P(TrainingRules, SparseRowsGatheredWithUnevenSizesAndSummed) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const Shape dense{5, 2};
    auto rows_of = [](int r) {
      std::vector<int64_t> idx;
      std::vector<double> val;
      for (int i = 0; i < r; ++i) {
        idx.push_back(i % 2 == 0 ? r % 5 : 0);
        val.push_back(r + 1.0);
        val.push_back(10.0 * (r + 1));
      }
      return RowTensor{Tensor::from_vector(idx),
                       Tensor::from_vector(val, {static_cast<int64_t>(idx.size()), 2}),
                       {5, 2}};
    };
    std::vector<double> want(10, 0.0);
    for (int r = 0; r < n; ++r) {
      auto d = to_dense(rows_of(r)).to_double_vector();
      for (size_t i = 0; i < want.size(); ++i) want[i] += d[i];
    }
    RowTensor mine = rows_of(rank);
    Tensor dense_x = Tensor::zeros(dense, DType::Float64);
    auto got = ag::get_bprop("all_reduce", {})({dense_x}, {dense_x}, {mine.indices, mine.values});
    soft.check("sparse all_reduce", [&] {
      RCHECK_EQ(got.size(), size_t{2});
      RowTensor sum{got[0], got[1], dense};
      check_close(to_dense(sum), Tensor::from_vector(want, dense), "dense sum");
      // Coalesced: sorted unique indices.
      auto idx = got[0].to_double_vector();
      for (size_t i = 1; i < idx.size(); ++i) RCHECK_LT(idx[i - 1], idx[i]);
    });
    auto mean = ag::get_bprop("mirror", {{"mean_flag", true}})({dense_x}, {dense_x},
                                                               {mine.indices, mine.values});
    soft.check("sparse mirror mean", [&] {
      std::vector<double> scaled = want;
      for (double& v : scaled) v /= n;
      check_close(to_dense({mean[0], mean[1], dense}), Tensor::from_vector(scaled, dense), "mean");
    });
    soft.check("sparse needs sum", [&] {
      RCHECK_THROWS(ag::get_bprop("all_reduce", {{"op", std::string("max")}})(
                        {dense_x}, {dense_x}, {mine.indices, mine.values}),
                    collie::ValueError, "row-sparse");
    });
    soft.finish();
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, TrainingRules, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "n" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace collie::testing
