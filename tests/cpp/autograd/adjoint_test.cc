// The dot-product (adjoint) test for every linear communication op, in float64:
//   sum_r <dy_r, (C x)_r> == sum_r <(C^T dy)_r, x_r>      (summed over ranks by all_reduce)
// plus, element by element, collie's forward against the single-process reference and
// collie's distributed backward against the reference's exact adjoint. Random data; uneven
// all-to-all counts with zeros; the world, the world reversed and an unsorted sub-group;
// roots != 0; world sizes 1-4. One forked job per world size runs every case.
#include <gtest/gtest.h>

#include <numeric>

#include "ag_test_util.h"
#include "rank_runner.h"
#include "reference.h"

namespace collie::testing {
namespace {

namespace ag = collie::autograd;

// One linear op on one group, as every rank sees it.
struct LinearCase {
  std::string name;
  World x;             // all group ranks' inputs
  WorldMap reference;  // the op, single process
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> forward;  // collie, this rank
  std::function<std::vector<Tensor>(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                    const std::vector<Tensor>& dy)>
      backward;  // collie's rule, this rank
};

using Rule = decltype(LinearCase::backward);

Rule rule_of(const ag::Bprop& b) {
  return [b](const std::vector<Tensor>& x, const std::vector<Tensor>& y,
             const std::vector<Tensor>& dy) { return b(x, y, dy); };
}

World random_world(const std::string& name, const std::vector<std::vector<Shape>>& shapes) {
  World w(shapes.size());
  for (size_t r = 0; r < shapes.size(); ++r) {
    for (size_t k = 0; k < shapes[r].size(); ++k) {
      w[r].push_back(
          random_tensor(shapes[r][k], seed_of(name, static_cast<int>(r), static_cast<int>(k))));
    }
  }
  return w;
}

World same_shapes(const std::string& name, size_t n, const Shape& shape) {
  return random_world(name, std::vector<std::vector<Shape>>(n, {shape}));
}

void run_case(const LinearCase& c, const TestGroup& g, int rank, SoftChecks& soft) {
  const size_t me = static_cast<size_t>(g.index_of(rank));
  const std::string what = c.name + " on " + g.name;
  // Every collective first (on every rank alike), value checks after.
  World yref = c.reference(c.x);
  std::vector<Tensor> y = c.forward(c.x[me]);
  World ybar(yref.size());
  for (size_t r = 0; r < yref.size(); ++r) {
    for (size_t k = 0; k < yref[r].size(); ++k) {
      ybar[r].push_back(random_tensor(
          yref[r][k].shape(), seed_of(c.name + "/dy", static_cast<int>(r), static_cast<int>(k))));
    }
  }
  std::vector<Tensor> xbar = c.backward(c.x[me], y, ybar[me]);
  double a = 0, b = 0;
  soft.check(what + " (local inner products)", [&] {
    a = dot(ybar[me], y);
    b = dot(xbar, c.x[me]);
  });
  Tensor sums =
      all_reduce(Tensor::from_vector(std::vector<double>{a, b}), ReduceOp::SUM, g.name).first;
  World xref = adjoint_by_columns(c.reference, c.x, ybar);

  soft.check(what + " forward", [&] {
    RCHECK_EQ(y.size(), yref[me].size());
    for (size_t k = 0; k < y.size(); ++k)
      check_close(y[k], yref[me][k], what + " forward output " + std::to_string(k));
  });
  soft.check(what + " adjoint identity", [&] {
    const double lhs = sums.item(0), rhs = sums.item(1);
    RCHECK(std::abs(lhs - rhs) <= 1e-12 * (1 + std::abs(lhs) + std::abs(rhs)))
        << what << ": sum <dy, Cx> = " << lhs << " but sum <C^T dy, x> = " << rhs;
  });
  soft.check(what + " backward", [&] {
    RCHECK_EQ(xbar.size(), xref[me].size());
    for (size_t k = 0; k < xbar.size(); ++k)
      check_close(xbar[k], xref[me][k], what + " dx " + std::to_string(k));
  });
}

// ---- the cases ----

std::vector<LinearCase> reduction_cases(const TestGroup& g) {
  const size_t n = g.ranks.size();
  const std::string grp = g.name;
  std::vector<LinearCase> cases;
  cases.push_back({"all_reduce sum", same_shapes("ar", n, {3, 2}), ref::all_reduce_sum,
                   [grp](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{all_reduce(x[0], ReduceOp::SUM, grp).first};
                   },
                   rule_of(ag::get_bprop("all_reduce", {{"group", grp}}))});
  cases.push_back({"all_gather", same_shapes("ag", n, {2, 3}), ref::all_gather,
                   [grp](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{all_gather_into_tensor(x[0], grp).first};
                   },
                   rule_of(ag::get_bprop("AllGather", {{"group", grp}}))});
  cases.push_back({"all_gather 0-d", same_shapes("ag0", n, {}), ref::all_gather,
                   [grp](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{all_gather_into_tensor(x[0], grp).first};
                   },
                   rule_of(ag::get_bprop("all_gather_into_tensor", {{"group", grp}}))});
  cases.push_back(
      {"reduce_scatter", same_shapes("rs", n, {2 * static_cast<int64_t>(n), 3}),
       ref::reduce_scatter_sum,
       [grp](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{reduce_scatter_tensor(x[0], ReduceOp::SUM, grp).first};
       },
       rule_of(
           ag::get_bprop("reduce_scatter_tensor", {{"group", grp}, {"op", std::string("sum")}}))});
  std::vector<int64_t> rows(n);
  for (size_t r = 0; r < n; ++r) rows[r] = static_cast<int64_t>(r % 3);  // rank 0 holds no rows
  std::vector<std::vector<Shape>> gv_shapes;
  for (size_t r = 0; r < n; ++r) gv_shapes.push_back({{rows[r], 2}});
  cases.push_back(
      {"all_gather_v", random_world("agv", gv_shapes), ref::all_gather_v,
       [grp](const std::vector<Tensor>& x) { return std::vector<Tensor>{all_gather_v(x[0], grp)}; },
       rule_of(ag::get_bprop("all_gather_v", {{"group", grp}}))});
  // Equal row counts take all_gather_into_tensor instead of the all-to-all.
  cases.push_back(
      {"all_gather_v equal rows", same_shapes("agv_equal", n, {3, 2}), ref::all_gather_v,
       [grp](const std::vector<Tensor>& x) { return std::vector<Tensor>{all_gather_v(x[0], grp)}; },
       rule_of(ag::get_bprop("all_gather_v", {{"group", grp}}))});
  std::vector<int64_t> rs_rows(n);
  for (size_t r = 0; r < n; ++r) rs_rows[r] = static_cast<int64_t>((r + 1) % 3);
  const int64_t total = std::accumulate(rs_rows.begin(), rs_rows.end(), int64_t{0});
  cases.push_back(
      {"reduce_scatter_v", same_shapes("rsv", n, {total, 2}),
       [rs_rows](const World& x) { return ref::reduce_scatter_v(x, rs_rows); },
       [grp, rs_rows](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{reduce_scatter_v(x[0], rs_rows, grp)};
       },
       rule_of(ag::get_bprop("reduce_scatter_v", {{"group", grp}, {"rows_per_rank", rs_rows}}))});
  return cases;
}

std::vector<LinearCase> rooted_cases(const TestGroup& g) {
  const size_t n = g.ranks.size();
  const std::string grp = g.name;
  const int last = static_cast<int>(n) - 1, mid = static_cast<int>(n) / 2;
  const int64_t w_last = g.ranks[static_cast<size_t>(last)],
                w_mid = g.ranks[static_cast<size_t>(mid)], w_first = g.ranks[0];
  std::vector<LinearCase> cases;
  cases.push_back({"broadcast", same_shapes("bc", n, {2, 2}),
                   [last](const World& x) { return ref::broadcast(x, last); },
                   [grp, w_last](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{broadcast(x[0], static_cast<int>(w_last), grp)};
                   },
                   rule_of(ag::get_bprop("broadcast", {{"group", grp}, {"src", w_last}}))});
  cases.push_back({"reduce sum", same_shapes("rd", n, {3}),
                   [mid](const World& x) { return ref::reduce_sum(x, mid); },
                   [grp, w_mid](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{
                         reduce(x[0], static_cast<int>(w_mid), ReduceOp::SUM, grp)};
                   },
                   rule_of(ag::get_bprop("Reduce", {{"group", grp}, {"dst", w_mid}}))});
  cases.push_back(
      {"gather", same_shapes("ga", n, {2, 2}),
       [last](const World& x) { return ref::gather(x, last); },
       [grp, w_last](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{gather_into_tensor(x[0], static_cast<int>(w_last), grp)};
       },
       rule_of(ag::get_bprop("gather_into_tensor", {{"group", grp}, {"dst", w_last}}))});
  cases.push_back({"gather 0-d", same_shapes("ga0", n, {}),
                   [mid](const World& x) { return ref::gather(x, mid); },
                   [grp, w_mid](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{
                         gather_into_tensor(x[0], static_cast<int>(w_mid), grp)};
                   },
                   rule_of(ag::get_bprop("CollectiveGather", {{"group", grp}, {"dst", w_mid}}))});
  cases.push_back({"scatter", same_shapes("sc", n, {2 * static_cast<int64_t>(n), 2}),
                   [](const World& x) { return ref::scatter(x, 0); },
                   [grp, w_first](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{
                         scatter_tensor(x[0], static_cast<int>(w_first), grp)};
                   },
                   rule_of(ag::get_bprop("scatter_tensor", {{"group", grp}, {"src", w_first}}))});
  return cases;
}

std::vector<LinearCase> all_to_all_cases(const TestGroup& g) {
  const size_t n = g.ranks.size();
  const int64_t ni = static_cast<int64_t>(n);
  const std::string grp = g.name;
  std::vector<LinearCase> cases;
  struct Dims {
    int64_t split, concat;
    Shape shape;
  };
  for (const Dims& d : {Dims{1, 0, {2, 2 * ni, 3}}, Dims{0, 2, {ni, 2, 3}}, Dims{1, 1, {2, 2 * ni}},
                        Dims{-1, 0, {1, 3 * ni}}, Dims{0, 0, {2 * ni, 3}}}) {
    const std::string name =
        "all_to_all split " + std::to_string(d.split) + " concat " + std::to_string(d.concat);
    cases.push_back({name, same_shapes(name, n, d.shape),
                     [d](const World& x) {
                       return ref::all_to_all(
                           x, d.split < 0 ? d.split + static_cast<int64_t>(x[0][0].dim()) : d.split,
                           d.concat);
                     },
                     [grp, d](const std::vector<Tensor>& x) {
                       return std::vector<Tensor>{all_to_all(x[0], d.split, d.concat, grp)};
                     },
                     rule_of(ag::get_bprop("AlltoAll", {{"group", grp},
                                                        {"split_dim", d.split},
                                                        {"concat_dim", d.concat},
                                                        {"split_count", ni}}))});
  }
  // Uneven flat counts, zeros included: counts[i][j] = (i + 2j) % 3.
  std::vector<std::vector<int64_t>> counts(n, std::vector<int64_t>(n));
  std::vector<std::vector<Shape>> v_shapes(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t s = 0;
    for (size_t j = 0; j < n; ++j) s += counts[i][j] = static_cast<int64_t>((i + 2 * j) % 3);
    v_shapes[i] = {{s}};
  }
  cases.push_back({"all_to_all_v", random_world("a2av", v_shapes),
                   [counts](const World& x) { return ref::all_to_all_v(x, counts); },
                   [grp, counts, n](const std::vector<Tensor>& x) {
                     const int me = get_rank(grp);
                     std::vector<int64_t> send = counts[static_cast<size_t>(me)], recv(n);
                     for (size_t j = 0; j < n; ++j) recv[j] = counts[j][static_cast<size_t>(me)];
                     return std::vector<Tensor>{all_to_all_v(x[0], send, recv, grp)};
                   },
                   [grp, counts, n](const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                    const std::vector<Tensor>& dy) {
                     const int me = get_rank(grp);
                     std::vector<int64_t> send = counts[static_cast<size_t>(me)], recv(n);
                     for (size_t j = 0; j < n; ++j) recv[j] = counts[j][static_cast<size_t>(me)];
                     return ag::get_bprop("AlltoAllV", {{"group", grp},
                                                        {"send_numel_list", send},
                                                        {"recv_numel_list", recv}})(x, y, dy);
                   }});
  // all_to_all_single with uneven rows: rows[i][j] = (2i + j) % 3.
  std::vector<std::vector<int64_t>> rows(n, std::vector<int64_t>(n));
  std::vector<std::vector<Shape>> s_shapes(n);
  std::vector<Shape> out_shapes(n, Shape{0, 2});
  for (size_t i = 0; i < n; ++i) {
    int64_t s = 0;
    for (size_t j = 0; j < n; ++j) {
      s += rows[i][j] = static_cast<int64_t>((2 * i + j) % 3);
      out_shapes[j][0] += rows[i][j];
    }
    s_shapes[i] = {{s, 2}};
  }
  auto splits = [rows, n](int me, bool input) {
    std::vector<int64_t> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = input ? rows[static_cast<size_t>(me)][j] : rows[j][static_cast<size_t>(me)];
    return v;
  };
  cases.push_back(
      {"all_to_all_single uneven", random_world("a2as", s_shapes),
       [rows, out_shapes](const World& x) { return ref::all_to_all_single(x, rows, out_shapes); },
       [grp, splits, out_shapes](const std::vector<Tensor>& x) {
         const int me = get_rank(grp);
         return std::vector<Tensor>{
             all_to_all_single_with_output_shape(out_shapes[static_cast<size_t>(me)], x[0],
                                                 splits(me, false), splits(me, true), grp)
                 .first};
       },
       [grp, splits, out_shapes](const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                 const std::vector<Tensor>& dy) {
         const int me = get_rank(grp);
         return ag::get_bprop("all_to_all_single_with_output_shape",
                              {{"group", grp},
                               {"output_shape", out_shapes[static_cast<size_t>(me)]},
                               {"output_split_sizes", splits(me, false)},
                               {"input_split_sizes", splits(me, true)}})(x, y, dy);
       }});
  std::vector<std::vector<int64_t>> even(n, std::vector<int64_t>(n, 2));
  cases.push_back({"all_to_all_single even", same_shapes("a2ase", n, {2 * ni, 2}),
                   [even, n](const World& x) {
                     return ref::all_to_all_single(
                         x, even, std::vector<Shape>(n, Shape{2 * static_cast<int64_t>(n), 2}));
                   },
                   [grp, ni](const std::vector<Tensor>& x) {
                     return std::vector<Tensor>{
                         all_to_all_single_with_output_shape({2 * ni, 2}, x[0], {}, {}, grp).first};
                   },
                   rule_of(ag::get_bprop("all_to_all_single", {{"group", grp}}))});
  // The list form: the block from i to j has 1 + (i + j) % 2 rows.
  std::vector<std::vector<Shape>> l_shapes(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j)
      l_shapes[i].push_back({1 + static_cast<int64_t>((i + j) % 2), 2});
  }
  cases.push_back({"all_to_all_with_output_shape", random_world("a2al", l_shapes),
                   ref::all_to_all_list,
                   [grp, l_shapes, n](const std::vector<Tensor>& x) {
                     const size_t me = static_cast<size_t>(get_rank(grp));
                     std::vector<Shape> outs;
                     for (size_t j = 0; j < n; ++j) outs.push_back(l_shapes[j][me]);
                     return all_to_all_with_output_shape(outs, x, grp).first;
                   },
                   rule_of(ag::get_bprop("all_to_all_with_output_shape", {{"group", grp}}))});
  // all_to_all_v_c: M[i][j] = (i + j) % 3; one unsent input row; two prior rows kept.
  std::vector<int64_t> matrix(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) matrix[i * n + j] = static_cast<int64_t>((i + j) % 3);
  }
  std::vector<std::vector<Shape>> c_shapes(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t sent = 0, got = 0;
    for (size_t j = 0; j < n; ++j) {
      sent += matrix[i * n + j];
      got += matrix[j * n + i];
    }
    c_shapes[i] = {{sent + 1, 3}, {got + 2, 3}};
  }
  cases.push_back(
      {"all_to_all_v_c", random_world("a2avc", c_shapes),
       [matrix](const World& x) { return ref::all_to_all_v_c(x, matrix); },
       [grp, matrix](const std::vector<Tensor>& x) {
         Tensor out = x[1].clone();
         all_to_all_v_c(out, x[0], matrix, grp);
         return std::vector<Tensor>{out};
       },
       rule_of(ag::get_bprop("all_to_all_v_c", {{"group", grp}, {"send_count_matrix", matrix}}))});
  return cases;
}

std::vector<LinearCase> p2p_cases(const TestGroup& g) {
  const size_t n = g.ranks.size();
  const std::string grp = g.name;
  const auto world_of = [g](size_t i) { return g.ranks[i % g.ranks.size()]; };
  std::vector<LinearCase> cases;
  if (n >= 2) {
    // send from group rank 0 to group rank n-1; every rank's output list is one tensor.
    const int src = world_of(0), dst = world_of(n - 1);
    World x = same_shapes("sr", n, {2, 3});
    cases.push_back(
        {"send/recv", x,
         [n](const World& w) {
           World y(n, {Tensor::scalar(0, DType::Float64)});
           y[n - 1] = {w[0][0]};
           return y;
         },
         [src, dst, grp](const std::vector<Tensor>& xs) {
           const int me = get_rank();
           if (me == src) {
             send(xs[0], dst, grp, 5);
             return std::vector<Tensor>{Tensor::scalar(0, DType::Float64)};
           }
           if (me == dst) return std::vector<Tensor>{recv(xs[0], src, grp, 5)};
           return std::vector<Tensor>{Tensor::scalar(0, DType::Float64)};
         },
         [src, dst, grp](const std::vector<Tensor>& xs, const std::vector<Tensor>& y,
                         const std::vector<Tensor>& dy) {
           const int me = get_rank();
           if (me == src)
             return ag::get_bprop(
                 "Send", {{"group", grp}, {"dst", int64_t{dst}}, {"tag", int64_t{5}}})(xs, y, dy);
           if (me == dst)
             return ag::get_bprop(
                 "Receive", {{"group", grp}, {"src", int64_t{src}}, {"tag", int64_t{5}}})(xs, y,
                                                                                          dy);
           return std::vector<Tensor>{Tensor::zeros(xs[0].shape(), DType::Float64)};
         }});
  }
  // A ring through batch_isend_irecv: isend to the next group rank, irecv from the previous.
  std::vector<std::vector<Shape>> ring_shapes(n, {{2, 3}, {2, 3}});
  cases.push_back({"batch_isend_irecv ring", random_world("ring", ring_shapes),
                   [n](const World& w) {
                     World y(n);
                     for (size_t r = 0; r < n; ++r)
                       y[r] = {Tensor::scalar(0), w[(r + n - 1) % n][0]};
                     return y;
                   },
                   [grp, world_of, n](const std::vector<Tensor>& xs) {
                     const size_t me = static_cast<size_t>(get_rank(grp));
                     return batch_isend_irecv(
                         {P2POp("isend", xs[0], world_of(me + 1), grp, 3),
                          P2POp("irecv", xs[1], world_of(me + n - 1), grp, 3)});
                   },
                   [grp, world_of, n](const std::vector<Tensor>& xs, const std::vector<Tensor>& y,
                                      const std::vector<Tensor>& dy) {
                     const size_t me = static_cast<size_t>(get_rank(grp));
                     return ag::get_bprop(
                         "batch_isend_irecv",
                         {{"group", grp},
                          {"ops", std::vector<std::string>{"isend", "irecv"}},
                          {"peers", std::vector<int64_t>{world_of(me + 1), world_of(me + n - 1)}},
                          {"tags", std::vector<int64_t>{3, 3}}})(xs, y, dy);
                   }});
  // NeighborExchange: A_r [2,3] to the next rank, B_r [1,2] to the previous one.
  std::vector<std::vector<Shape>> ne_shapes(n, {{2, 3}, {1, 2}});
  auto ids = [world_of, n](size_t me) {
    return std::pair<std::vector<int>, std::vector<int>>{{world_of(me + 1), world_of(me + n - 1)},
                                                         {world_of(me + n - 1), world_of(me + 1)}};
  };
  cases.push_back({"neighbor_exchange", random_world("ne", ne_shapes),
                   [n](const World& w) {
                     World y(n);
                     for (size_t r = 0; r < n; ++r)
                       y[r] = {w[(r + n - 1) % n][0], w[(r + 1) % n][1]};
                     return y;
                   },
                   [grp, ids](const std::vector<Tensor>& xs) {
                     auto [send_ids, recv_ids] = ids(static_cast<size_t>(get_rank(grp)));
                     return neighbor_exchange(xs, send_ids, recv_ids, {{2, 3}, {1, 2}}, grp);
                   },
                   [grp, ids](const std::vector<Tensor>& xs, const std::vector<Tensor>& y,
                              const std::vector<Tensor>& dy) {
                     auto [send_ids, recv_ids] = ids(static_cast<size_t>(get_rank(grp)));
                     return ag::get_bprop(
                         "NeighborExchange",
                         {{"group", grp},
                          {"send_rank_ids", std::vector<int64_t>(send_ids.begin(), send_ids.end())},
                          {"recv_rank_ids", std::vector<int64_t>(recv_ids.begin(), recv_ids.end())},
                          {"recv_shapes", std::vector<Shape>{{2, 3}, {1, 2}}},
                          {"send_shapes", std::vector<Shape>{{2, 3}, {1, 2}}}})(xs, y, dy);
                   }});
  return cases;
}

// The halo specs of a grid of world ranks: 2x2 for 4 ranks (corners included), 1x2 for
// 2, 3x1 for 3, 1x1 for 1. Sends are [top 1, bottom 2, left 1, right 2] rows/cols.
std::vector<HaloSpec> grid_specs(int n) {
  const int rows = n == 4 ? 2 : (n == 3 ? 3 : 1), cols = n / rows;
  const int dr[8] = {-1, -1, 0, 1, 1, 1, 0, -1};
  const int dc[8] = {0, 1, 1, 1, 0, -1, -1, -1};
  std::vector<HaloSpec> specs;
  for (int r = 0; r < n; ++r) {
    HaloSpec s;
    s.send_lens = {1, 2, 1, 2};
    s.send_rank_ids.assign(8, -1);
    for (int d = 0; d < 8; ++d) {
      const int i = r / cols + dr[d], j = r % cols + dc[d];
      if (i >= 0 && i < rows && j >= 0 && j < cols)
        s.send_rank_ids[static_cast<size_t>(d)] = i * cols + j;
    }
    s.recv_rank_ids = s.send_rank_ids;
    const auto has = [&](int d) { return s.send_rank_ids[static_cast<size_t>(d)] >= 0; };
    // A halo is as wide as what the neighbour on that side sends towards this rank.
    s.recv_lens = {has(0) ? 2 : 0, has(4) ? 1 : 0, has(6) ? 2 : 0, has(2) ? 1 : 0};
    specs.push_back(s);
  }
  return specs;
}

LinearCase halo_case(int n) {
  const auto specs = grid_specs(n);
  return {"neighbor_exchange_v2 grid", same_shapes("halo", static_cast<size_t>(n), {1, 2, 3, 4}),
          [specs](const World& x) { return ref::halo_exchange(x, specs); },
          [specs](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{
                neighbor_exchange_v2(x[0], specs[static_cast<size_t>(get_rank())])};
          },
          [specs](const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                  const std::vector<Tensor>& dy) {
            const HaloSpec& s = specs[static_cast<size_t>(get_rank())];
            auto i64 = [](const std::vector<int>& v) {
              return std::vector<int64_t>(v.begin(), v.end());
            };
            return ag::get_bprop("NeighborExchangeV2", {{"send_rank_ids", i64(s.send_rank_ids)},
                                                        {"send_lens", s.send_lens},
                                                        {"recv_rank_ids", i64(s.recv_rank_ids)},
                                                        {"recv_lens", s.recv_lens},
                                                        {"data_format", std::string("NCHW")}})(x, y,
                                                                                               dy);
          }};
}

class Adjoint : public ::testing::TestWithParam<int> {};

void run_family(int n, const std::function<std::vector<LinearCase>(const TestGroup&)>& make) {
  run_ranks(n, [n, make](int rank) {
    const auto groups = test_groups(n);
    create_test_groups(groups, rank);
    SoftChecks soft;
    for (const TestGroup& g : groups) {
      if (!g.has(rank)) continue;
      for (const LinearCase& c : make(g)) run_case(c, g, rank, soft);
    }
    soft.finish();
  });
}

TEST_P(Adjoint, AllReduceGatherScatterFamilies) { run_family(GetParam(), reduction_cases); }
TEST_P(Adjoint, RootedOps) { run_family(GetParam(), rooted_cases); }
TEST_P(Adjoint, AllToAllFamily) { run_family(GetParam(), all_to_all_cases); }
TEST_P(Adjoint, PointToPointAndNeighborExchange) { run_family(GetParam(), p2p_cases); }

TEST_P(Adjoint, HaloExchangeV2OnAGrid) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    run_case(halo_case(n), test_groups(n)[0], rank, soft);
    soft.finish();
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, Adjoint, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "n" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace collie::testing
