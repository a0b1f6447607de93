// The tape's local ops and mechanics (single process, no communication): each op's
// gradient against central finite differences in float64, float32 agreement, numpy
// broadcasting, and the tape's rules (recording, accumulation, reuse, set_value).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "collie/autograd.h"
#include "collie/errors.h"

namespace {

namespace ag = collie::autograd;
using ag::Variable;
using collie::DType;
using collie::Shape;
using collie::Tensor;

Tensor random(const Shape& shape, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(collie::shape_numel(shape)));
  for (double& x : v) x = d(gen);
  return Tensor::from_vector(v, shape);
}

// Compares the tape's gradient of f at each input with central differences.
void check_fd(const std::string& what, const std::vector<Tensor>& inputs,
              const std::function<Variable(const std::vector<Variable>&)>& f) {
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.clone(), true);
  {
    ag::Tape tape;
    tape.backward(ag::sum(f(vars)));
  }
  auto loss_at = [&](const std::vector<Tensor>& xs) {
    std::vector<Variable> vs;
    for (const Tensor& t : xs) vs.emplace_back(t);
    return ag::sum(f(vs)).value().item();
  };
  const double h = 1e-6;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto grad = vars[k].grad().to_double_vector();
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      std::vector<Tensor> up, down;
      for (const Tensor& t : inputs) {
        up.push_back(t.clone());
        down.push_back(t.clone());
      }
      up[k].data<double>()[i] += h;
      down[k].data<double>()[i] -= h;
      const double fd = (loss_at(up) - loss_at(down)) / (2 * h);
      EXPECT_NEAR(grad[static_cast<size_t>(i)], fd, 1e-6 * (1 + std::abs(fd)))
          << what << " input " << k << " element " << i;
    }
  }
}

TEST(LocalOps, GradientsMatchFiniteDifferences) {
  Tensor a = random({3, 4}, 1), b = random({3, 4}, 2), m = random({4, 2}, 3);
  check_fd("add", {a, b}, [](const auto& v) { return v[0] + v[1]; });
  check_fd("sub", {a, b}, [](const auto& v) { return v[0] - v[1]; });
  check_fd("mul", {a, b}, [](const auto& v) { return v[0] * v[1]; });
  check_fd("scale", {a}, [](const auto& v) { return ag::scale(v[0], -2.5); });
  check_fd("matmul", {a, m}, [](const auto& v) { return ag::sin(ag::matmul(v[0], v[1])); });
  check_fd("mean", {a}, [](const auto& v) { return ag::square(ag::mean(v[0])); });
  check_fd("square", {a}, [](const auto& v) { return ag::square(v[0]); });
  check_fd("sin", {a}, [](const auto& v) { return ag::sin(v[0]); });
  check_fd("exp", {a}, [](const auto& v) { return ag::exp(v[0]); });
  check_fd("relu", {random({3, 4}, 4, 0.1, 1), random({3, 4}, 5, -1, -0.1)},
           [](const auto& v) { return ag::relu(v[0]) + ag::relu(v[1]); });
  check_fd("reshape", {a}, [](const auto& v) { return ag::sin(ag::reshape(v[0], {2, 6})); });
  check_fd("slice", {a}, [](const auto& v) { return ag::exp(ag::slice(v[0], 1, 1, 3)); });
  check_fd("cat", {a, random({3, 2}, 6)}, [](const auto& v) {
    return ag::sin(ag::cat({v[0], v[1]}, 1));
  });
  // The same variable used twice: cotangents add.
  check_fd("reuse", {a}, [](const auto& v) { return v[0] * ag::sin(v[0]); });
}

TEST(LocalOps, BroadcastingReducesBackToTheInputShape) {
  Tensor x = random({4, 3}, 7), bias = random({3}, 8), col = random({4, 1}, 9), s = random({}, 10);
  check_fd("row bias", {x, bias}, [](const auto& v) { return ag::square(v[0] + v[1]); });
  check_fd("column", {x, col}, [](const auto& v) { return v[0] * v[1]; });
  check_fd("scalar", {x, s}, [](const auto& v) { return v[0] - v[1]; });
  EXPECT_THROW(ag::add(Variable(random({2, 3}, 1)), Variable(random({3, 2}, 1))),
               collie::ValueError);
}

TEST(LocalOps, Float32FollowsFloat64) {
  Tensor a = random({5, 3}, 11), m = random({3, 2}, 12);
  Variable a64(a, true), a32(a.to(DType::Float32), true), m64(m), m32(m.to(DType::Float32));
  {
    ag::Tape tape;
    tape.backward(ag::mean(ag::exp(ag::matmul(a64, m64))));
  }
  {
    ag::Tape tape;
    tape.backward(ag::mean(ag::exp(ag::matmul(a32, m32))));
  }
  EXPECT_EQ(a32.grad().dtype(), DType::Float32);
  EXPECT_TRUE(a32.grad().to(DType::Float64).allclose(a64.grad(), 1e-5, 1e-7));
  EXPECT_THROW(ag::sum(Variable(Tensor::ones({2}, DType::Int32))), collie::TypeError);
  EXPECT_THROW(Variable(Tensor::ones({2}, DType::Int64), true), collie::TypeError);
  EXPECT_THROW(ag::add(a64, a32), collie::TypeError);
}

TEST(Tape, RecordsOnlyWhatNeedsGradients) {
  Variable c(Tensor::ones({2})), w(Tensor::ones({2}), true);
  Variable outside = ag::sin(w);  // no tape: a constant
  EXPECT_FALSE(outside.requires_grad());
  ag::Tape tape;
  Variable k = ag::sin(c);  // no input requires grad: not recorded
  EXPECT_EQ(tape.size(), 0u);
  EXPECT_FALSE(k.requires_grad());
  Variable y = ag::sin(w) * k;
  EXPECT_EQ(tape.size(), 2u);
  EXPECT_TRUE(y.requires_grad());
}

TEST(Tape, GradientsAccumulateUntilZeroed) {
  Variable w(Tensor::full({2}, 3.0, DType::Float64), true);
  for (int i = 0; i < 2; ++i) {
    ag::Tape tape;
    tape.backward(ag::sum(ag::square(w)));
  }
  EXPECT_TRUE(w.grad().allclose(Tensor::full({2}, 12.0, DType::Float64)));
  w.zero_grad();
  EXPECT_FALSE(w.has_grad());
  EXPECT_TRUE(w.grad().allclose(Tensor::zeros({2}, DType::Float64)));
}

TEST(Tape, BackwardRunsOnceAndChecksItsArguments) {
  Variable w(Tensor::ones({2}, DType::Float64), true);
  ag::Tape tape;
  Variable loss = ag::sum(ag::exp(w));
  tape.backward(loss);
  EXPECT_THROW(tape.backward(loss), collie::RuntimeError);
  ag::Tape t2;
  Variable l2 = ag::exp(w);
  EXPECT_THROW(t2.backward({l2}, {Tensor::ones({3}, DType::Float64)}), collie::ValueError);
  ag::Tape t3;
  Variable l3 = ag::exp(w);
  EXPECT_THROW(t3.backward({l3, l3}, {Tensor::ones({2}, DType::Float64)}), collie::ValueError);
  EXPECT_THROW(Variable().value(), collie::RuntimeError);
}

TEST(Tape, ExplicitSeedsAndLeafRoots) {
  Variable w(Tensor::from_vector(std::vector<double>{1, 2}), true);
  ag::Tape tape;
  Variable y = ag::scale(w, 3.0);
  tape.backward(
      {y, w}, {Tensor::from_vector(std::vector<double>{1, 10}), Tensor::ones({2}, DType::Float64)});
  EXPECT_TRUE(w.grad().allclose(Tensor::from_vector(std::vector<double>{4, 31})));
}

TEST(Tape, SetValueKeepsRecordedValues) {
  Variable w(Tensor::full({2}, 2.0, DType::Float64), true);
  ag::Tape tape;
  Variable loss = ag::sum(ag::square(w));
  w.set_value(Tensor::full({2}, 100.0, DType::Float64));  // an optimizer step mid-way
  tape.backward(loss);
  EXPECT_TRUE(w.grad().allclose(Tensor::full({2}, 4.0, DType::Float64)));  // from the recorded 2.0
  EXPECT_THROW(w.set_value(Tensor::ones({3}, DType::Float64)), collie::ValueError);
  EXPECT_THROW(loss.set_value(Tensor::scalar(1, DType::Float64)), collie::RuntimeError);
}

TEST(Tape, InnerTapeHidesOuterUntilDestroyed) {
  Variable w(Tensor::ones({2}, DType::Float64), true);
  ag::Tape outer;
  Variable a = ag::exp(w);
  {
    ag::Tape inner;
    Variable b = ag::sin(w);
    EXPECT_EQ(inner.size(), 1u);
    EXPECT_EQ(outer.size(), 1u);
  }
  Variable c = ag::square(w);
  EXPECT_EQ(outer.size(), 2u);
}

}  // namespace
