// Helpers for the autograd tests (see ag_test_util.h).
#include "ag_test_util.h"

#include <cmath>
#include <random>
#include <sstream>

namespace collie::testing {

uint64_t seed_of(std::string_view name, int rank, int salt) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  h = (h ^ static_cast<uint64_t>(rank + 1)) * 1099511628211ull;
  return (h ^ static_cast<uint64_t>(salt + 7)) * 1099511628211ull;
}

Tensor random_tensor(const Shape& shape, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = dist(gen);
  return Tensor::from_vector(v, shape);
}

Tensor random_away_from_zero(const Shape& shape, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> mag(0.5, 1.5);
  std::bernoulli_distribution sign(0.5);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = sign(gen) ? mag(gen) : -mag(gen);
  return Tensor::from_vector(v, shape);
}

double dot(const Tensor& a, const Tensor& b) {
  const auto av = a.to_double_vector(), bv = b.to_double_vector();
  RCHECK_EQ(av.size(), bv.size()) << "dot of " << shape_to_string(a.shape()) << " and "
                                  << shape_to_string(b.shape());
  double s = 0;
  for (size_t i = 0; i < av.size(); ++i) s += av[i] * bv[i];
  return s;
}

double dot(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  RCHECK_EQ(a.size(), b.size()) << "dot of tensor lists";
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += dot(a[i], b[i]);
  return s;
}

void check_close(const Tensor& got, const Tensor& want, const std::string& what, double rtol,
                 double atol) {
  RCHECK_EQ(shape_to_string(got.shape()), shape_to_string(want.shape())) << what << ": shape";
  const auto g = got.to_double_vector(), w = want.to_double_vector();
  std::ostringstream bad;
  int shown = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = (std::isnan(g[i]) && std::isnan(w[i])) ||
                    std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]);
    if (!ok && shown++ < 5) bad << " [" << i << "] got " << g[i] << " want " << w[i] << ";";
  }
  RCHECK(shown == 0) << what << ": " << shown << " elements differ:" << bad.str();
}

int TestGroup::index_of(int world_rank) const {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == world_rank) return static_cast<int>(i);
  }
  return -1;
}

std::vector<TestGroup> test_groups(int n) {
  std::vector<TestGroup> groups;
  TestGroup world{std::string(WORLD), {}};
  for (int r = 0; r < n; ++r) world.ranks.push_back(r);
  groups.push_back(world);
  if (n >= 2) {
    TestGroup rev{"ag_reversed", {}};
    for (int r = n - 1; r >= 0; --r) rev.ranks.push_back(r);
    groups.push_back(rev);
  }
  if (n == 3) groups.push_back({"ag_sub", {2, 0}});
  if (n == 4) groups.push_back({"ag_sub", {3, 1, 2}});
  return groups;
}

void create_test_groups(const std::vector<TestGroup>& groups, int rank) {
  for (const TestGroup& g : groups) {
    if (g.name != WORLD && g.has(rank)) create_group(g.name, g.ranks);
  }
}

World adjoint_by_columns(const WorldMap& f, const World& x, const World& ybar) {
  World zero(x.size()), xbar(x.size());
  for (size_t r = 0; r < x.size(); ++r) {
    for (const Tensor& t : x[r]) zero[r].push_back(Tensor::zeros(t.shape(), t.dtype()));
  }
  for (size_t r = 0; r < x.size(); ++r) {
    for (size_t k = 0; k < x[r].size(); ++k) {
      std::vector<double> col(static_cast<size_t>(x[r][k].numel()));
      for (size_t i = 0; i < col.size(); ++i) {
        World e = zero;
        e[r][k] = Tensor::zeros(x[r][k].shape(), DType::Float64);
        e[r][k].data<double>()[i] = 1.0;
        World y = f(e);
        double s = 0;
        for (size_t q = 0; q < y.size(); ++q) s += dot(ybar[q], y[q]);
        col[i] = s;
      }
      xbar[r].push_back(Tensor::from_vector(col, x[r][k].shape()));
    }
  }
  return xbar;
}

}  // namespace collie::testing
