// The non-linear reductions: all_reduce and reduce with PROD, MAX and MIN.
//  - Central finite differences of the global loss L = sum_r <W_r, y_r> (computed in one
//    process from every rank's data), with data away from zeros and ties.
//  - Exact values where MindSpore's rules fail: zeros for PROD (MindSpore divides by x:
//    NaN), ties for MAX/MIN (MindSpore gives every tied rank the whole gradient), NaN.
// World sizes 1-4, the world and an unsorted sub-group, roots != 0.
#include <gtest/gtest.h>

#include <cmath>

#include "ag_test_util.h"
#include "rank_runner.h"

namespace collie::testing {
namespace {

namespace ag = collie::autograd;

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::PROD:
      return a * b;
    case ReduceOp::MAX:
      return std::max(a, b);
    case ReduceOp::MIN:
      return std::min(a, b);
    case ReduceOp::SUM:
      return a + b;
  }
  return a;
}

// y = op over ranks, element-wise.
std::vector<double> reduce_serial(ReduceOp op, const std::vector<std::vector<double>>& xs) {
  std::vector<double> y = xs[0];
  for (size_t r = 1; r < xs.size(); ++r) {
    for (size_t i = 0; i < y.size(); ++i) y[i] = combine(op, y[i], xs[r][i]);
  }
  return y;
}

// L = sum over the ranks whose output counts (all, or only the root) of <W_r, y>.
double loss(ReduceOp op, const std::vector<std::vector<double>>& xs,
            const std::vector<std::vector<double>>& ws, int root) {
  const auto y = reduce_serial(op, xs);
  double l = 0;
  for (size_t r = 0; r < ws.size(); ++r) {
    if (root >= 0 && static_cast<int>(r) != root) continue;
    for (size_t i = 0; i < y.size(); ++i) l += ws[r][i] * y[i];
  }
  return l;
}

std::vector<double> fd_gradient(ReduceOp op, std::vector<std::vector<double>> xs,
                                const std::vector<std::vector<double>>& ws, int me, int root) {
  const double h = 1e-6;
  std::vector<double> g(xs[static_cast<size_t>(me)].size());
  for (size_t i = 0; i < g.size(); ++i) {
    double& v = xs[static_cast<size_t>(me)][i];
    const double keep = v;
    v = keep + h;
    const double up = loss(op, xs, ws, root);
    v = keep - h;
    const double down = loss(op, xs, ws, root);
    v = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

const ReduceOp kNonLinear[] = {ReduceOp::PROD, ReduceOp::MAX, ReduceOp::MIN};

class NonLinear : public ::testing::TestWithParam<int> {};

TEST_P(NonLinear, FiniteDifferencesAwayFromTiesAndZeros) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    const auto groups = test_groups(n);
    create_test_groups(groups, rank);
    SoftChecks soft;
    for (const TestGroup& g : groups) {
      if (!g.has(rank)) continue;
      const size_t size = g.ranks.size();
      const int me = g.index_of(rank);
      for (ReduceOp op : kNonLinear) {
        const std::string opn(reduce_op_name(op));
        std::vector<std::vector<double>> xs, ws;
        for (size_t r = 0; r < size; ++r) {
          xs.push_back(random_away_from_zero({6}, seed_of("fd x " + opn, static_cast<int>(r)))
                           .to_double_vector());
          ws.push_back(
              random_tensor({6}, seed_of("fd w " + opn, static_cast<int>(r))).to_double_vector());
        }
        Tensor x = Tensor::from_vector(xs[static_cast<size_t>(me)]);
        Tensor w = Tensor::from_vector(ws[static_cast<size_t>(me)]);
        // all_reduce: every rank's output counts.
        Tensor y = all_reduce(x, op, g.name).first;
        Tensor dx = ag::get_bprop("all_reduce", {{"op", opn}, {"group", g.name}})(x, y, w);
        soft.check("all_reduce " + opn + " on " + g.name, [&] {
          check_close(dx, Tensor::from_vector(fd_gradient(op, xs, ws, me, -1)), "all_reduce " + opn,
                      1e-6, 1e-7);
        });
        // reduce to the last group member: only its output counts.
        const int root = static_cast<int>(size) - 1;
        const int dst = g.ranks[static_cast<size_t>(root)];
        Tensor yr = reduce(x, dst, op, g.name);
        Tensor dxr =
            ag::get_bprop("reduce", {{"op", opn}, {"dst", int64_t{dst}}, {"group", g.name}})(
                x, yr, me == root ? w : Tensor::ones({1}, DType::Float64));
        soft.check("reduce " + opn + " on " + g.name, [&] {
          check_close(dxr, Tensor::from_vector(fd_gradient(op, xs, ws, me, root)), "reduce " + opn,
                      1e-6, 1e-7);
        });
      }
    }
    soft.finish();
  });
}

// dy_r = r + 1 (group rank), so S = sum_r dy_r = n(n+1)/2 and a wrong rank shows.
TEST_P(NonLinear, ProdIsExactAndFiniteAtZeros) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    const auto groups = test_groups(n);
    create_test_groups(groups, rank);
    SoftChecks soft;
    for (const TestGroup& g : groups) {
      if (!g.has(rank)) continue;
      const int size = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
      // e0: group rank 0 holds 0, others 2. e1: ranks 0 and size-1 hold 0 (one zero when
      // size == 1). e2: rank r holds r + 1, no zeros. e3: rank r holds -(r + 2).
      auto value = [size](int r, int e) -> double {
        switch (e) {
          case 0:
            return r == 0 ? 0.0 : 2.0;
          case 1:
            return (r == 0 || r == size - 1) ? 0.0 : 3.0;
          case 2:
            return r + 1.0;
          default:
            return -(r + 2.0);
        }
      };
      std::vector<double> xv, expect;
      const double s = size * (size + 1) / 2.0;
      for (int e = 0; e < 4; ++e) {
        xv.push_back(value(me, e));
        double others = 1;
        for (int k = 0; k < size; ++k) {
          if (k != me) others *= value(k, e);
        }
        expect.push_back(s * others);
      }
      Tensor x = Tensor::from_vector(xv);
      Tensor dy = Tensor::full({4}, me + 1.0, DType::Float64);
      Tensor y = all_reduce(x, ReduceOp::PROD, g.name).first;
      Tensor dx =
          ag::get_bprop("AllReduce", {{"op", std::string("prod")}, {"group", g.name}})(x, y, dy);
      soft.check("all_reduce prod at zeros on " + g.name,
                 [&] { check_close(dx, Tensor::from_vector(expect), "all_reduce prod", 0, 0); });
      // reduce PROD to group rank 0 (world rank g.ranks[0]): the root's dy is broadcast.
      const int dst = g.ranks[0];
      Tensor yr = reduce(x, dst, ReduceOp::PROD, g.name);
      Tensor dyr =
          me == 0 ? Tensor::full({4}, 5.0, DType::Float64) : Tensor::zeros({1}, DType::Float64);
      Tensor dxr = ag::get_bprop(
          "reduce", {{"op", std::string("prod")}, {"dst", int64_t{dst}}, {"group", g.name}})(x, yr,
                                                                                             dyr);
      std::vector<double> expect_r;
      for (double v : expect) expect_r.push_back(v / s * 5.0);
      soft.check("reduce prod at zeros on " + g.name,
                 [&] { check_close(dxr, Tensor::from_vector(expect_r), "reduce prod", 1e-15, 0); });
    }
    soft.finish();
  });
}

// Ties split the summed cotangent evenly; NaN results send it to the NaN holders.
TEST_P(NonLinear, MaxMinSplitEvenlyAtTiesAndRouteNaN) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    const auto groups = test_groups(n);
    create_test_groups(groups, rank);
    SoftChecks soft;
    for (const TestGroup& g : groups) {
      if (!g.has(rank)) continue;
      const int size = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
      const double s = size * (size + 1) / 2.0;
      for (ReduceOp op : {ReduceOp::MAX, ReduceOp::MIN}) {
        const double sign = op == ReduceOp::MAX ? 1.0 : -1.0;
        // e0: all tie. e1: ranks 0 and 1 tie at the extremum (only rank 0 when size == 1).
        // e2: the last rank alone holds it. e3: rank 0 holds NaN.
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::vector<double> xv = {sign * 3.0, sign * (me <= 1 ? 5.0 : 1.0),
                                  sign * (me == size - 1 ? 9.0 : 1.0), me == 0 ? nan : 1.0};
        const int tied1 = std::min(size, 2);
        std::vector<double> expect = {s / size, me <= 1 ? s / tied1 : 0.0, me == size - 1 ? s : 0.0,
                                      me == 0 ? s : 0.0};
        Tensor x = Tensor::from_vector(xv);
        Tensor dy = Tensor::full({4}, me + 1.0, DType::Float64);
        const std::string opn(reduce_op_name(op));
        Tensor y = all_reduce(x, op, g.name).first;
        Tensor dx = ag::get_bprop("all_reduce", {{"op", opn}, {"group", g.name}})(x, y, dy);
        soft.check("all_reduce " + opn + " ties on " + g.name, [&] {
          check_close(dx, Tensor::from_vector(expect), "all_reduce " + opn, 1e-15, 0);
        });
        // reduce to the last group member; only its dy (= 7) counts.
        const int root = size - 1, dst = g.ranks[static_cast<size_t>(root)];
        Tensor yr = reduce(x, dst, op, g.name);
        Tensor dyr = me == root ? Tensor::full({4}, 7.0, DType::Float64)
                                : Tensor::zeros({1}, DType::Float64);
        Tensor dxr = ag::get_bprop(
            "reduce", {{"op", opn}, {"dst", int64_t{dst}}, {"group", g.name}})(x, yr, dyr);
        std::vector<double> expect_r;
        for (double v : expect) expect_r.push_back(v / s * 7.0);
        soft.check("reduce " + opn + " ties on " + g.name, [&] {
          check_close(dxr, Tensor::from_vector(expect_r), "reduce " + opn, 1e-15, 0);
        });
      }
    }
    soft.finish();
  });
}

// float32 runs the same rules (the tape's dtypes are float32 and float64).
TEST_P(NonLinear, Float32ProdAndMax) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    Tensor x = Tensor::from_vector(
        std::vector<float>{rank == 0 ? 0.f : 2.f, static_cast<float>(rank + 1)});
    Tensor dy = Tensor::ones({2}, DType::Float32);
    Tensor y = all_reduce(x, ReduceOp::PROD).first;
    Tensor dx = ag::get_bprop("all_reduce", {{"op", std::string("prod")}})(x, y, dy);
    RCHECK_EQ(dx.dtype(), DType::Float32);
    double others0 = 1, others1 = 1;
    for (int k = 0; k < n; ++k) {
      if (k == rank) continue;
      others0 *= k == 0 ? 0.0 : 2.0;
      others1 *= k + 1.0;
    }
    check_close(dx, Tensor::from_vector(std::vector<double>{n * others0, n * others1}),
                "float32 prod", 1e-6, 0);
    Tensor ym = all_reduce(x, ReduceOp::MAX).first;
    Tensor dxm = ag::get_bprop("all_reduce", {{"op", std::string("max")}})(x, ym, dy);
    const double m1 = rank == n - 1 ? n : 0.0;
    const double m0 = n == 1 ? 1.0 : (rank == 0 ? 0.0 : static_cast<double>(n) / (n - 1));
    check_close(dxm, Tensor::from_vector(std::vector<double>{m0, m1}), "float32 max", 1e-6, 0);
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, NonLinear, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "n" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace collie::testing
