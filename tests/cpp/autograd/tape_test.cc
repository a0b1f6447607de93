// The tape through collectives against a serial single-process reference: each rank runs
// a small program whose loss depends on other ranks through collectives, calls backward,
// and compares its parameters' gradients with those of the same program written for all
// ranks at once in one process (collectives replaced by cat/slice/add), differentiated by
// the same tape. Objective: the sum of the per-rank losses. World sizes 1-4, sub-groups.
#include <gtest/gtest.h>

#include "ag_test_util.h"
#include "rank_runner.h"

namespace collie::testing {
namespace {

namespace ag = collie::autograd;
using ag::Variable;

Variable param(const Shape& shape, const std::string& name, int r) {
  return Variable(random_tensor(shape, seed_of(name, r)), true);
}
Variable data(const Shape& shape, const std::string& name, int r) {
  return Variable(random_tensor(shape, seed_of(name, r)));
}

void check_grad(const Variable& got, const Variable& want, const std::string& what) {
  check_close(got.grad(), want.grad(), what, 1e-10, 1e-12);
}

Variable add_all(const std::vector<Variable>& parts) {
  Variable acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) acc = acc + parts[i];
  return acc;
}

// all_gather -> sin -> per-rank weights; parameters feed the gather through a matmul.
void gather_program(const TestGroup& g, int rank, SoftChecks& soft) {
  const int n = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
  const int64_t rows = 2 * n;
  std::vector<Variable> ws;
  {
    ag::Tape tape;
    std::vector<Variable> hs;
    for (int r = 0; r < n; ++r) {
      ws.push_back(param({3, 2}, "P1 w", r));
      hs.push_back(ag::matmul(data({2, 3}, "P1 x", r), ws.back()));
    }
    Variable gathered = ag::cat(hs, 0);
    std::vector<Variable> losses;
    for (int r = 0; r < n; ++r)
      losses.push_back(ag::sum(ag::sin(gathered) * data({rows, 2}, "P1 c", r)));
    tape.backward(add_all(losses));
  }
  Variable w = param({3, 2}, "P1 w", me);
  ag::Tape tape;
  Variable gathered = ag::all_gather_into_tensor(ag::matmul(data({2, 3}, "P1 x", me), w), g.name);
  tape.backward(ag::sum(ag::sin(gathered) * data({rows, 2}, "P1 c", me)));
  soft.check("gather program on " + g.name,
             [&] { check_grad(w, ws[static_cast<size_t>(me)], "w"); });
}

// reduce_scatter of squares, a broadcast from the last member, exp of both.
void scatter_program(const TestGroup& g, int rank, SoftChecks& soft) {
  const int n = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
  std::vector<Variable> vs;
  {
    ag::Tape tape;
    std::vector<Variable> squares;
    for (int r = 0; r < n; ++r) {
      vs.push_back(param({2 * n, 2}, "P2 v", r));
      squares.push_back(ag::square(vs.back()));
    }
    std::vector<Variable> zs;
    for (int r = 0; r < n; ++r) {
      std::vector<Variable> blocks;
      for (int j = 0; j < n; ++j)
        blocks.push_back(ag::slice(squares[static_cast<size_t>(j)], 0, 2 * r, 2 * r + 2));
      zs.push_back(add_all(blocks));
    }
    std::vector<Variable> losses;
    for (int r = 0; r < n; ++r) {
      Variable z = zs[static_cast<size_t>(r)] + zs.back();
      losses.push_back(ag::sum(ag::exp(ag::scale(z, 0.1)) * data({2, 2}, "P2 c", r)));
    }
    tape.backward(add_all(losses));
  }
  Variable v = param({2 * n, 2}, "P2 v", me);
  ag::Tape tape;
  Variable z = ag::reduce_scatter_tensor(ag::square(v), ReduceOp::SUM, g.name);
  Variable b = ag::broadcast(z, g.ranks.back(), g.name);
  tape.backward(ag::sum(ag::exp(ag::scale(z + b, 0.1)) * data({2, 2}, "P2 c", me)));
  soft.check("scatter program on " + g.name,
             [&] { check_grad(v, vs[static_cast<size_t>(me)], "v"); });
}

// Data parallel: one replicated w, per-rank data, mirror(mean): every rank's gradient is
// the gradient of the mean of the per-rank losses.
void mirror_program(const TestGroup& g, int rank, SoftChecks& soft) {
  const int n = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
  Variable w_ref = param({3, 2}, "P3 w", 0);
  {
    ag::Tape tape;
    std::vector<Variable> losses;
    for (int r = 0; r < n; ++r)
      losses.push_back(ag::mean(ag::square(ag::matmul(data({4, 3}, "P3 x", r), w_ref))));
    tape.backward(ag::scale(add_all(losses), 1.0 / n));
  }
  Variable w = param({3, 2}, "P3 w", 0);
  ag::Tape tape;
  tape.backward(
      ag::mean(ag::square(ag::matmul(data({4, 3}, "P3 x", me), ag::mirror(w, g.name, true)))));
  soft.check("mirror program on " + g.name, [&] { check_grad(w, w_ref, "w"); });
}

// A pipeline: group rank r receives from r-1, applies relu(h W_r), sends to r+1; only the
// last rank has a loss, the others call backward() with no loss.
void pipeline_program(const TestGroup& g, int rank, SoftChecks& soft) {
  const int n = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
  std::vector<Variable> ws;
  {
    ag::Tape tape;
    Variable h = data({2, 3}, "P4 x", 0);
    for (int r = 0; r < n; ++r) {
      ws.push_back(param({3, 3}, "P4 w", r));
      h = ag::relu(ag::matmul(h, ws.back()));
    }
    tape.backward(ag::sum(h * data({2, 3}, "P4 c", 0)));
  }
  Variable w = param({3, 3}, "P4 w", me);
  ag::Tape tape;
  Variable h =
      me == 0 ? data({2, 3}, "P4 x", 0)
              : ag::recv({2, 3}, DType::Float64, g.ranks[static_cast<size_t>(me - 1)], g.name, 7);
  h = ag::relu(ag::matmul(h, w));
  if (me == n - 1) {
    tape.backward(ag::sum(h * data({2, 3}, "P4 c", 0)));
  } else {
    ag::send(h, g.ranks[static_cast<size_t>(me + 1)], g.name, 7);
    tape.backward();  // no loss here: the send's backward receives h's cotangent
  }
  soft.check("pipeline program on " + g.name,
             [&] { check_grad(w, ws[static_cast<size_t>(me)], "w"); });
}

// Only the first member has a loss; an all_to_all and a gather feed it.
void rooted_loss_program(const TestGroup& g, int rank, SoftChecks& soft) {
  const int n = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
  std::vector<Variable> vs;
  {
    ag::Tape tape;
    for (int r = 0; r < n; ++r) vs.push_back(param({2, 2 * n}, "P5 v", r));
    std::vector<Variable> gathered;
    for (int r = 0; r < n; ++r) {
      std::vector<Variable> parts;
      for (int j = 0; j < n; ++j)
        parts.push_back(ag::slice(vs[static_cast<size_t>(j)], 1, 2 * r, 2 * r + 2));
      gathered.push_back(ag::sin(ag::cat(parts, 0)));
    }
    tape.backward(ag::sum(ag::cat(gathered, 0) * data({2 * n * n, 2}, "P5 c", 0)));
  }
  Variable v = param({2, 2 * n}, "P5 v", me);
  ag::Tape tape;
  Variable s = ag::gather_into_tensor(ag::sin(ag::all_to_all(v, 1, 0, g.name)), g.ranks[0], g.name);
  if (me == 0) {
    tape.backward(ag::sum(s * data({2 * n * n, 2}, "P5 c", 0)));
  } else {
    tape.backward();
  }
  soft.check("rooted-loss program on " + g.name,
             [&] { check_grad(v, vs[static_cast<size_t>(me)], "v"); });
}

// A ring NeighborExchange and an all_reduce in one loss.
void neighbor_program(const TestGroup& g, int rank, SoftChecks& soft) {
  const int n = static_cast<int>(g.ranks.size()), me = g.index_of(rank);
  std::vector<Variable> ps;
  {
    ag::Tape tape;
    for (int r = 0; r < n; ++r) ps.push_back(param({2, 3}, "P6 p", r));
    Variable total = add_all(ps);
    std::vector<Variable> losses;
    for (int r = 0; r < n; ++r) {
      Variable prev = ps[static_cast<size_t>((r + n - 1) % n)];
      losses.push_back(ag::sum(ag::square(prev) * data({2, 3}, "P6 c", r)) +
                       ag::sum(total * data({2, 3}, "P6 d", r)));
    }
    tape.backward(add_all(losses));
  }
  Variable p = param({2, 3}, "P6 p", me);
  ag::Tape tape;
  const int next = g.ranks[static_cast<size_t>((me + 1) % n)],
            prev = g.ranks[static_cast<size_t>((me + n - 1) % n)];
  Variable q = ag::neighbor_exchange({p}, {next}, {prev}, {{2, 3}}, g.name, DType::Float64)[0];
  Variable loss = ag::sum(ag::square(q) * data({2, 3}, "P6 c", me)) +
                  ag::sum(ag::all_reduce(p, ReduceOp::SUM, g.name) * data({2, 3}, "P6 d", me));
  tape.backward(loss);
  soft.check("neighbor program on " + g.name,
             [&] { check_grad(p, ps[static_cast<size_t>(me)], "p"); });
}

class TapeVsSerial : public ::testing::TestWithParam<int> {};

TEST_P(TapeVsSerial, ProgramsThroughCollectives) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    const auto groups = test_groups(n);
    create_test_groups(groups, rank);
    SoftChecks soft;
    for (const TestGroup& g : groups) {
      if (!g.has(rank)) continue;
      gather_program(g, rank, soft);
      scatter_program(g, rank, soft);
      mirror_program(g, rank, soft);
      pipeline_program(g, rank, soft);
      rooted_loss_program(g, rank, soft);
      neighbor_program(g, rank, soft);
    }
    soft.finish();
  });
}

// A collective whose output only one rank's loss uses still runs its backward everywhere:
// the tape walks every recorded collective, reached or not.
TEST_P(TapeVsSerial, UnreachedCollectivesStillRunTheirBackward) {
  const int n = GetParam();
  run_ranks(n, [](int rank) {
    Variable x(Tensor::full({3}, rank + 1.0, DType::Float64), true);
    Tensor c = Tensor::from_vector(std::vector<double>{1, 2, 3});
    ag::Tape tape;
    Variable y = ag::all_reduce(x);
    Variable loss = rank == 0 ? ag::sum(y * Variable(c)) : ag::sum(ag::square(x));
    tape.backward(loss);
    std::vector<double> want;
    for (int i = 0; i < 3; ++i) want.push_back(c.item(i) + (rank == 0 ? 0.0 : 2.0 * (rank + 1)));
    check_close(x.grad(), Tensor::from_vector(want), "x.grad");
  });
}

// A rank whose input needs no gradient still takes part; its cotangent is dropped.
TEST_P(TapeVsSerial, RanksWithoutGradientsTakePart) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    Variable x(Tensor::full({2}, 1.0, DType::Float64), /*requires_grad=*/rank % 2 == 0);
    ag::Tape tape;
    tape.backward(ag::sum(ag::all_gather_into_tensor(x)));
    if (rank % 2 == 0)
      check_close(x.grad(), Tensor::full({2}, static_cast<double>(n), DType::Float64), "x.grad");
    RCHECK_EQ(x.has_grad(), rank % 2 == 0);
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, TapeVsSerial, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "n" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace collie::testing
