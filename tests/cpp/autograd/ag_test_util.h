// Helpers for the autograd tests: seeded random data, inner products, closeness checks,
// the test groups for a world size, and the brute-force adjoint of a reference map.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "collie/autograd.h"
#include "collie/collie.h"

namespace collie::testing {

// A distributed value: world[r] = the tensors rank r holds (group rank order).
using World = std::vector<std::vector<Tensor>>;
using WorldMap = std::function<World(const World&)>;

// A seed from a case name, a rank and a salt (stable across ranks and runs).
uint64_t seed_of(std::string_view name, int rank, int salt = 0);
// float64 values uniform in [-1, 1).
Tensor random_tensor(const Shape& shape, uint64_t seed);
// float64 values in +-[0.5, 1.5), all distinct with high probability: no zeros, no ties.
Tensor random_away_from_zero(const Shape& shape, uint64_t seed);

double dot(const Tensor& a, const Tensor& b);
double dot(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

// Shape, then every element within atol + rtol*|want|; CheckFailure naming `what` and
// the first mismatches otherwise.
void check_close(const Tensor& got, const Tensor& want, const std::string& what,
                 double rtol = 1e-12, double atol = 1e-12);

// A test group: its name and world ranks in group order.
struct TestGroup {
  std::string name;
  std::vector<int> ranks;
  int index_of(int world_rank) const;  // group rank, -1 if not a member
  bool has(int world_rank) const { return index_of(world_rank) >= 0; }
};
// For world size n: the world; the world reversed (n >= 2); an unsorted sub-group
// (n >= 3: {2, 0}; n == 4: {3, 1, 2}).
std::vector<TestGroup> test_groups(int n);
// Creates the non-world groups this rank belongs to.
void create_test_groups(const std::vector<TestGroup>& groups, int rank);

// The adjoint of a LINEAR reference map F at cotangent ybar, column by column: entry i of
// xbar[r] = sum_s <ybar[s], F(e_{r,i})[s]>. `x` gives the shapes and dtypes.
World adjoint_by_columns(const WorldMap& f, const World& x, const World& ybar);

}  // namespace collie::testing
