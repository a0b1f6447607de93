// mlp.h — a two-layer perceptron on collie's autograd tape, shared by the training
// examples (data_parallel_train.cc, pipeline_train.cc), and the checks they run.
//
// Everything is deterministic (fixed seeds), so every rank can build the same full batch
// and the same initial parameters, and can train the single-process reference model
// itself to compare against.
#pragma once

#include <collie/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mlp {

namespace ag = collie::autograd;
using collie::DType;
using collie::Tensor;

inline constexpr int64_t kIn = 4, kHidden = 8, kOut = 2;

// Parameters of relu(x W1 + b1) W2 + b2.
struct Params {
  ag::Variable w1, b1, w2, b2;
  std::vector<ag::Variable*> all() { return {&w1, &b1, &w2, &b2}; }
};

inline Tensor uniform(const collie::Shape& shape, uint32_t seed, double scale) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-scale, scale);
  std::vector<double> v(static_cast<size_t>(collie::shape_numel(shape)));
  for (double& x : v) x = d(gen);
  return Tensor::from_vector(v, shape);
}

inline Params init_params() {
  return {ag::Variable(uniform({kIn, kHidden}, 1, 0.5), true),
          ag::Variable(uniform({kHidden}, 2, 0.1), true),
          ag::Variable(uniform({kHidden, kOut}, 3, 0.5), true),
          ag::Variable(uniform({kOut}, 4, 0.1), true)};
}

// The full batch: inputs in [-1, 1), targets a smooth function of them.
struct Batch {
  Tensor x, y;
};
inline Batch make_batch(int64_t rows) {
  Tensor x = uniform({rows, kIn}, 5, 1.0);
  std::vector<double> y;
  for (int64_t i = 0; i < rows; ++i) {
    const double a = x.at<double>({i, 0}), b = x.at<double>({i, 1}), c = x.at<double>({i, 2}),
                 d = x.at<double>({i, 3});
    y.push_back(std::sin(a + b) + 0.5 * c);
    y.push_back(a * d - 0.25 * b);
  }
  return {x, Tensor::from_vector(y, {rows, kOut})};
}

// Rows [start, start + count) as a new tensor.
inline Tensor rows(const Tensor& t, int64_t start, int64_t count) {
  return t.slice(start, start + count).contiguous();
}

inline ag::Variable hidden(const ag::Variable& x, const ag::Variable& w1, const ag::Variable& b1) {
  return ag::relu(ag::matmul(x, w1) + b1);
}
inline ag::Variable output(const ag::Variable& h, const ag::Variable& w2, const ag::Variable& b2) {
  return ag::matmul(h, w2) + b2;
}
inline ag::Variable mse(const ag::Variable& pred, const Tensor& target) {
  return ag::mean(ag::square(pred - ag::Variable(target)));
}

// p <- p - lr * grad, then the gradient is cleared.
inline void sgd_step(ag::Variable& p, double lr) {
  auto v = p.value().to_double_vector();
  const auto g = p.grad().to_double_vector();
  for (size_t i = 0; i < v.size(); ++i) v[i] -= lr * g[i];
  p.set_value(Tensor::from_vector(v, p.shape()).to(p.dtype()));
  p.zero_grad();
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto av = a.to_double_vector(), bv = b.to_double_vector();
  double m = 0;
  for (size_t i = 0; i < av.size(); ++i) m = std::max(m, std::abs(av[i] - bv[i]));
  return av.size() == bv.size() ? m : INFINITY;
}

}  // namespace mlp
