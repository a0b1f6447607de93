// Group's local arithmetic (src/runtime/group.h): world <-> group ranks and the
// even split of rows that reduce_scatter, scatter and all_to_all make on every
// call (a shift for power-of-two sizes, a division otherwise: the same answers).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "runtime/group.h"

namespace collie::detail {
namespace {

// A group of `n` ranks that only records (no backend: nothing is launched).
Group group_of(int n) {
  std::vector<int> ranks(static_cast<size_t>(n));
  std::iota(ranks.rbegin(), ranks.rend(), 0);  // n-1, ..., 0: group rank i is world rank n-1-i
  return Group("g", ranks, 0, 10, nullptr);
}

TEST(Group, RowsPerRankMatchesDivisionForEverySize) {
  for (int n = 1; n <= 9; ++n) {
    Group g = group_of(n);
    for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{6},
                         int64_t{7}, int64_t{8}, int64_t{12}, int64_t{16}, int64_t{63}, int64_t{64},
                         int64_t{72}, int64_t{1} << 40, (int64_t{1} << 40) + 8}) {
      const int64_t want = rows % n == 0 ? rows / n : -1;
      EXPECT_EQ(g.rows_per_rank(rows), want) << rows << " rows over " << n << " ranks";
    }
  }
}

TEST(Group, MapsWorldRanksToGroupRanks) {
  Group g = group_of(4);
  EXPECT_EQ(g.size(), 4);
  EXPECT_EQ(g.rank(), 3);  // world rank 0 is last in the list
  EXPECT_EQ(g.group_rank_of(3), 0);
  EXPECT_EQ(g.group_rank_of(1), 2);
  EXPECT_EQ(g.group_rank_of(4), -1);
}

TEST(Group, MapsWorldRanksToGroupRanksForEveryOrderAndSize) {
  // The world's own order (a range check), reversed, and a gapped subset (searched).
  for (int n = 1; n <= 5; ++n) {
    std::vector<int> in_order(static_cast<size_t>(n)), reversed(static_cast<size_t>(n));
    std::iota(in_order.begin(), in_order.end(), 0);
    std::iota(reversed.rbegin(), reversed.rend(), 0);
    std::vector<int> gapped;
    for (int i = 0; i < n; ++i) gapped.push_back(2 * i);
    for (const auto& ranks : {in_order, reversed, gapped}) {
      Group g("g", ranks, ranks.back(), 10, nullptr);
      EXPECT_EQ(g.rank(), n - 1);
      for (int w = -2; w <= 2 * n + 1; ++w) {
        const auto it = std::find(ranks.begin(), ranks.end(), w);
        const int want = it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
        EXPECT_EQ(g.group_rank_of(w), want) << "world rank " << w << " in a group of " << n;
      }
    }
  }
}

}  // namespace
}  // namespace collie::detail
