// all_gather_into_tensor: concatenation along dim 0 in group-rank order, every dtype and
// count, world sizes 1-4, 0-d inputs, unsorted sub-groups, async, non-contiguous input.
#include "comm_test_util.h"

namespace collie::testing {
namespace {

class AllGatherWorld : public ::testing::TestWithParam<int> {};

TEST_P(AllGatherWorld, EveryDtypeAndCount) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t count : element_counts()) {
        const bool async = (index++ % 2) == 0;
        const std::string what = "all_gather_into_tensor " + case_name(dt, count, async);
        soft.check(what, [&] {
          // Rows of 2 elements: input [count, 2] -> output [n*count, 2].
          Tensor x = make_tensor({count, 2}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y = finish(all_gather_into_tensor(x, WORLD, async), async, what);
          const int64_t block = count * 2;
          check_tensor(y, dt, {n * count, 2}, [&](int64_t i) {
            return pattern_value(dt, static_cast<int>(i / block), i % block);
          }, what);
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AllGatherWorld, ::testing::Values(1, 2, 3, 4),
                         world_size_name);

// A 0-d input gives shape [N].
TEST(AllGather, ScalarInputGivesVector) {
  run_ranks(3, [](int rank) {
    auto [y, h] = all_gather_into_tensor(Tensor::scalar(10.0 * rank, DType::Int64));
    check_tensor(y, DType::Int64, {3}, [](int64_t i) { return 10.0 * i; }, "all_gather of 0-d");
  });
}

// In a group created as [3, 1], group rank 0 is world rank 3: its block comes first.
TEST(AllGather, UnsortedSubGroupsUseCreationOrder) {
  run_ranks(4, [](int rank) {
    SoftChecks soft;
    const std::vector<int> pair = {3, 1};
    const std::vector<int> trio = {2, 0, 3};
    if (index_in(pair, rank) >= 0) create_group("ag_pair", pair);
    if (index_in(trio, rank) >= 0) create_group("ag_trio", trio);
    for (DType dt : all_dtypes()) {
      for (const auto& [name, ranks] : {std::pair{"ag_pair", pair}, std::pair{"ag_trio", trio}}) {
        if (index_in(ranks, rank) < 0) continue;
        const std::string what = std::string("all_gather_into_tensor in ") + name + " " +
                                 std::string(dtype_name(dt));
        soft.check(what, [&] {
          Tensor x = make_tensor({5, 3}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          auto [y, h] = all_gather_into_tensor(x, name);
          const int64_t g = static_cast<int64_t>(ranks.size());
          check_tensor(y, dt, {5 * g, 3}, [&](int64_t i) {
            return pattern_value(dt, ranks[static_cast<size_t>(i / 15)], i % 15);
          }, what);
        });
      }
    }
    soft.finish();
  });
}

TEST(AllGather, NonContiguousInput) {
  run_ranks(2, [](int rank) {
    Tensor base = make_tensor({3, 4}, DType::Int16, [&](int64_t i) { return 100 * rank + i; });
    Tensor view = base.transpose(0, 1);  // [4, 3], view(a, b) = base(b, a) = 100 rank + 4b + a
    auto [y, h] = all_gather_into_tensor(view);
    check_tensor(y, DType::Int16, {8, 3}, [](int64_t k) {
      int64_t r = k / 12, a = (k % 12) / 3, b = k % 3;
      return 100.0 * r + 4 * b + a;
    }, "all_gather of a transposed view");
  });
}

TEST(AllGather, Errors) {
  run_ranks(2, [](int) {
    SoftChecks soft;
    SOFT_THROWS_DERIVED(soft, all_gather_into_tensor(Tensor::ones({2}), "no_such_group"), collie::Error,
                              "all_gather_into_tensor", "no_such_group");
    soft.finish();
  });
}

}  // namespace
}  // namespace collie::testing
