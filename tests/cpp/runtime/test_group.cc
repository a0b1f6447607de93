// Group's local arithmetic (src/runtime/group.h): world <-> group ranks and the
// even split of rows that reduce_scatter, scatter and all_to_all make on every
// call (a shift for power-of-two sizes, a division otherwise: the same answers);
// and its choke point: which Works share the group's name, and close().
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "collie/errors.h"
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

// A backend that completes every operation at once and says when it is destroyed.
class CompletingBackend : public Backend {
 public:
  explicit CompletingBackend(bool* destroyed) : destroyed_(destroyed) {}
  ~CompletingBackend() override { *destroyed_ = true; }
  void all_reduce(const WorkPtr& w, const void*, void*, size_t, DType, ReduceOp) override {
    w->complete();
  }
  void all_gather(const WorkPtr& w, const void*, void*, size_t, DType) override { w->complete(); }
  void reduce_scatter(const WorkPtr& w, const void*, void*, size_t, DType, ReduceOp) override {
    w->complete();
  }
  void reduce(const WorkPtr& w, const void*, void*, size_t, DType, ReduceOp, int) override {
    w->complete();
  }
  void broadcast(const WorkPtr& w, const void*, void*, size_t, DType, int) override {
    w->complete();
  }
  void gather(const WorkPtr& w, const void*, void*, size_t, DType, int) override { w->complete(); }
  void scatter(const WorkPtr& w, const void*, void*, size_t, DType, int) override { w->complete(); }
  void barrier(const WorkPtr& w) override { w->complete(); }
  void all_to_all(const WorkPtr& w, const AllToAllInput&, CountSpan, void*, CountSpan,
                  DType) override {
    w->complete();
  }
  void send(const WorkPtr& w, const void*, size_t, DType, int, int) override { w->complete(); }
  void recv(const WorkPtr& w, void*, size_t, DType, int, int) override { w->complete(); }
  void drain() override {}

 private:
  bool* destroyed_;
};

OpInfo all_reduce_info(uint64_t count, bool blocking) {
  OpInfo info;
  info.kind = OpKind::AllReduce;
  info.count = count;
  info.dtype = DType::Float32;
  info.blocking = blocking;
  return info;
}

WorkPtr submit_all_reduce(Group& g, uint64_t count, bool blocking) {
  return g.submit(all_reduce_info(count, blocking), {}, [&](Backend& b, const WorkPtr& w) {
    b.all_reduce(w, nullptr, nullptr, count, DType::Float32, ReduceOp::SUM);
  });
}

// A blocking call's caller holds the group until its Work has ended, so only
// that Work borrows the group's name (no reference count) and is held by its
// caller alone (Work::caller_holds); any Work that may outlive the call shares
// the name, and still names the group after the Group is gone.
TEST(Group, OnlyWorksThatEndWithTheirCallBorrowTheGroupName) {
  bool destroyed = false;
  auto g = std::make_unique<Group>("g", std::vector<int>{0, 1}, 0, 10,
                                   std::make_unique<CompletingBackend>(&destroyed));
  WorkPtr blocking = submit_all_reduce(*g, 2, /*blocking=*/true);
  WorkPtr async = submit_all_reduce(*g, 2, /*blocking=*/false);
  // 16 KiB a rank or more may take a single-copy path whose Work can outlive
  // a failure (Work::retain_on_failure).
  WorkPtr large = submit_all_reduce(*g, 4096, /*blocking=*/true);
  ASSERT_TRUE(blocking->is_completed() && async->is_completed() && large->is_completed());
  EXPECT_EQ(*blocking->info().group, "g");
  EXPECT_EQ(blocking->info().group.use_count(), 0);
  EXPECT_GT(async->info().group.use_count(), 0);
  EXPECT_GT(large->info().group.use_count(), 0);
  EXPECT_EQ(blocking->info().seq + 1, async->info().seq);
  // The same Works are the ones a backend may refer to without a reference.
  EXPECT_TRUE(blocking->caller_holds());
  EXPECT_FALSE(async->caller_holds());
  EXPECT_FALSE(large->caller_holds());
  blocking.reset();
  g.reset();
  EXPECT_TRUE(destroyed);
  EXPECT_EQ(async->info().describe(), "all_reduce(sum) float32 x2 on group 'g' seq 2");
  EXPECT_EQ(*large->info().group, "g");
}

// close() detaches the backend at once; a later call fails naming itself and
// the group, and reaches no backend.
TEST(Group, CloseDetachesTheBackendAndLaterCallsFail) {
  bool destroyed = false;
  Group g("g", {0, 1}, 0, 10, std::make_unique<CompletingBackend>(&destroyed));
  EXPECT_TRUE(submit_all_reduce(g, 2, true)->is_completed());
  g.close();
  EXPECT_TRUE(destroyed);
  bool launched = false;
  try {
    g.submit(all_reduce_info(2, true), {}, [&](Backend&, const WorkPtr&) { launched = true; });
    ADD_FAILURE() << "a call on a closed group did not throw";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "all_reduce(sum) float32 x2 on group 'g' seq 2: the group was destroyed "
              "(destroy_group or release).");
  }
  EXPECT_FALSE(launched);
  g.drain();  // a closed group has nothing to drain
  g.close();  // and closing twice is harmless
}

}  // namespace
}  // namespace collie::detail
