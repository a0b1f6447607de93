// The table of which transfers take a single copy (src/backends/shm/copy_rules.h),
// row by row against the sizes its header documents. That each row steers its
// operation is tested end to end by the comm tests (cma_test's CmaCopyPath,
// CmaOversubscribed and CmaManyReaders, p2p_test under each COLLIE_COPY_PATH).
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/shm/copy_rules.h"

namespace collie::detail {
namespace {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;
constexpr size_t kAny = SizeRange::kUnbounded;

// A group of `n` ranks that agreed on CMA; `each_has_cpu`: as many CPUs as
// ranks, so collectives read with CMA and p2p is not oversubscribed.
CopyRules rules(CopyPath path, int n, bool each_has_cpu) {
  return copy_rules_for({.path = path,
                         .cma = true,
                         .cma_for_collectives = each_has_cpu,
                         .group_size = n,
                         .oversubscribed = !each_has_cpu});
}

TEST(SizeRange, HoldsFromUpToButNotIncludingBelow) {
  const SizeRange r{64 * KiB, 8 * MiB};
  EXPECT_FALSE(r.contains(64 * KiB - 1));
  EXPECT_TRUE(r.contains(64 * KiB));
  EXPECT_TRUE(r.contains(8 * MiB - 1));
  EXPECT_FALSE(r.contains(8 * MiB));
  EXPECT_FALSE(r.empty());
  EXPECT_TRUE(kNoSizes.empty());
  EXPECT_FALSE(kNoSizes.contains(0));
  EXPECT_FALSE(kNoSizes.contains(kAny - 1));
  EXPECT_TRUE(sizes_from(1).contains(kAny - 1));
}

TEST(CopyRules, StagedGroupsReadOnlyMidSizedDataMoversWithCma) {
  const CopyRules r = rules(CopyPath::kStaged, 2, true);
  EXPECT_EQ(r.path, CopyPath::kStaged);
  EXPECT_EQ(r.all_reduce_two_shot_from, 128 * KiB);
  EXPECT_EQ(rules(CopyPath::kStaged, 4, true).all_reduce_two_shot_from, 256 * KiB);
  EXPECT_TRUE(r.all_reduce_cma.empty());
  EXPECT_TRUE(r.reduce_cma.empty());
  const SizeRange mid{64 * KiB, 8 * MiB};
  EXPECT_EQ(r.all_gather_cma, mid);
  EXPECT_EQ(r.gather_cma, mid);
  EXPECT_EQ(r.broadcast_cma, mid);
  EXPECT_EQ(r.scatter_cma, mid);
  EXPECT_TRUE(r.root_on_huge_pages.applies(8 * MiB, 8 * MiB));
  EXPECT_FALSE(r.root_on_huge_pages.applies(8 * MiB - 1, 64 * MiB));
  EXPECT_EQ(r.all_to_all_piece_cma, (SizeRange{32 * KiB, 512 * KiB}));
  EXPECT_EQ(r.p2p_pull_from, kAny);
}

TEST(CopyRules, SingleCopyGroupsReadFromSmallSizes) {
  const CopyRules r = rules(CopyPath::kSingleCopy, 2, true);
  EXPECT_EQ(r.all_reduce_two_shot_from, 8 * KiB);
  EXPECT_EQ(rules(CopyPath::kSingleCopy, 3, true).all_reduce_two_shot_from, 16 * KiB);
  EXPECT_EQ(r.all_reduce_cma, (SizeRange{128 * KiB, 64 * MiB}));
  EXPECT_EQ(r.reduce_cma, sizes_from(32 * KiB));
  EXPECT_EQ(r.all_gather_cma, (SizeRange{8 * KiB, 32 * MiB}));
  EXPECT_EQ(r.gather_cma, (SizeRange{16 * KiB, 32 * MiB}));
  EXPECT_EQ(r.broadcast_cma, sizes_from(16 * KiB));
  EXPECT_EQ(r.scatter_cma, (SizeRange{16 * KiB, 32 * MiB}));
  EXPECT_FALSE(r.root_on_huge_pages.applies(kAny - 1, kAny - 1));
  EXPECT_EQ(r.all_to_all_piece_cma, sizes_from(16 * KiB));
  EXPECT_EQ(r.p2p_pull_from, 16 * KiB);
}

TEST(CopyRules, HybridGroupsTakeSingleCopyRulesFrom128KiBWithZen5Exceptions) {
  const CopyRules r = rules(CopyPath::kHybrid, 2, true);
  EXPECT_EQ(r.path, CopyPath::kHybrid);
  EXPECT_EQ(r.all_reduce_two_shot_from, 128 * KiB);
  EXPECT_EQ(r.all_reduce_cma, (SizeRange{128 * KiB, 64 * MiB}));
  EXPECT_EQ(r.reduce_cma, sizes_from(2 * MiB));        // staged reduce wins below
  EXPECT_EQ(r.all_gather_cma, sizes_from(128 * KiB));  // no upper limit
  EXPECT_EQ(r.gather_cma, sizes_from(128 * KiB));      // no upper limit either
  EXPECT_EQ(r.broadcast_cma, sizes_from(128 * KiB));
  EXPECT_EQ(r.scatter_cma, sizes_from(128 * KiB));
  EXPECT_EQ(r.all_to_all_piece_cma, sizes_from(128 * KiB));
  EXPECT_EQ(r.p2p_pull_from, 128 * KiB);
}

TEST(CopyRules, WithMoreRanksThanCpusCollectivesStageButForSomeLargeCalls) {
  const CopyRules staged = rules(CopyPath::kStaged, 4, false);
  EXPECT_TRUE(staged.all_gather_cma.empty());
  EXPECT_TRUE(staged.gather_cma.empty());
  EXPECT_TRUE(staged.broadcast_cma.empty());
  EXPECT_FALSE(staged.root_on_huge_pages.applies(kAny - 1, kAny - 1));
  EXPECT_EQ(staged.all_to_all_piece_cma, sizes_from(512 * KiB));
  EXPECT_EQ(staged.p2p_pull_from, kAny);

  const CopyRules single = rules(CopyPath::kSingleCopy, 4, false);
  EXPECT_TRUE(single.all_reduce_cma.empty());
  EXPECT_TRUE(single.reduce_cma.empty());
  EXPECT_TRUE(single.all_gather_cma.empty());
  EXPECT_TRUE(single.gather_cma.empty());
  EXPECT_TRUE(single.scatter_cma.empty());
  EXPECT_EQ(single.broadcast_cma, (SizeRange{2 * MiB, 32 * MiB}));
  EXPECT_EQ(single.all_to_all_piece_cma, sizes_from(128 * KiB));
  EXPECT_EQ(single.p2p_pull_from, 128 * KiB);
  EXPECT_EQ(single.all_reduce_two_shot_from, 16 * KiB);

  const CopyRules hybrid = rules(CopyPath::kHybrid, 4, false);
  EXPECT_EQ(hybrid.all_reduce_cma, (SizeRange{2 * MiB, 64 * MiB}));
  EXPECT_EQ(hybrid.reduce_cma, sizes_from(2 * MiB));  // 4 ranks: 4 x 256 KiB below 2 MiB
  EXPECT_EQ(rules(CopyPath::kHybrid, 8, false).reduce_cma, sizes_from(2 * MiB + 1));
  EXPECT_EQ(rules(CopyPath::kHybrid, 16, false).reduce_cma, sizes_from(4 * MiB + 1));
  EXPECT_EQ(hybrid.all_gather_cma, (SizeRange{2 * MiB, 32 * MiB}));
  EXPECT_EQ(hybrid.gather_cma, sizes_from(512 * KiB));
  EXPECT_EQ(hybrid.scatter_cma, sizes_from(512 * KiB));
  EXPECT_EQ(hybrid.broadcast_cma, (SizeRange{2 * MiB, 32 * MiB}));
  EXPECT_EQ(hybrid.all_to_all_piece_cma, sizes_from(512 * KiB));  // as staged
  EXPECT_EQ(hybrid.p2p_pull_from, kAny);                          // as staged
}

// With more ranks than CPUs a hybrid group scatters with CMA from the size its
// staged path takes two whole steps for (twice the slot's share per rank), 512
// KiB at most, whatever the number of readers; broadcast keeps its range.
TEST(CopyRules, OversubscribedHybridGroupsScatterWithCmaFromTwoStagedSteps) {
  for (int n : {2, 3, 4, 8, 16}) {
    const size_t step = (1 * MiB) / static_cast<size_t>(n) / 64 * 64;
    const CopyRules r = copy_rules_for({.path = CopyPath::kHybrid,
                                        .cma = true,
                                        .cma_for_collectives = false,
                                        .group_size = n,
                                        .oversubscribed = true,
                                        .staged_piece_bytes = step});
    EXPECT_EQ(r.scatter_cma, sizes_from(std::min(512 * KiB, 2 * step))) << n << " ranks";
    EXPECT_FALSE(r.scatter_cma.contains(std::min(512 * KiB, 2 * step) - 1)) << n << " ranks";
    EXPECT_EQ(r.gather_cma, sizes_from(512 * KiB)) << n << " ranks";
    EXPECT_EQ(r.broadcast_cma, (SizeRange{2 * MiB, 32 * MiB})) << n << " ranks";
  }
  // 8 ranks: from 256 KiB.
  EXPECT_EQ(copy_rules_for({.path = CopyPath::kHybrid,
                            .cma = true,
                            .group_size = 8,
                            .oversubscribed = true,
                            .staged_piece_bytes = 128 * KiB})
                .scatter_cma.from,
            256 * KiB);
  // Only hybrid groups: staged and single-copy ones stage scatters there.
  for (CopyPath path : {CopyPath::kStaged, CopyPath::kSingleCopy}) {
    EXPECT_TRUE(copy_rules_for({.path = path,
                                .cma = true,
                                .group_size = 8,
                                .oversubscribed = true,
                                .staged_piece_bytes = 128 * KiB})
                    .scatter_cma.empty());
  }
}

// With more ranks than CPUs staged and hybrid groups read all_to_all's pieces
// with CMA from the size the slots take two whole steps for (twice a pair's
// share of the slot), 512 KiB at most; single-copy groups keep 128 KiB.
TEST(CopyRules, OversubscribedGroupsPullAllToAllPiecesFromTwoStagedSteps) {
  for (int n : {2, 4, 8, 16}) {
    const size_t share = (1 * MiB - 64 * static_cast<size_t>(n)) / static_cast<size_t>(n) / 64 * 64;
    for (CopyPath path : {CopyPath::kStaged, CopyPath::kHybrid, CopyPath::kSingleCopy}) {
      const CopyRules r = copy_rules_for({.path = path,
                                          .cma = true,
                                          .cma_for_collectives = false,
                                          .group_size = n,
                                          .oversubscribed = true,
                                          .staged_all_to_all_piece_bytes = share});
      const size_t from =
          path == CopyPath::kSingleCopy ? 128 * KiB : std::min(512 * KiB, 2 * share);
      EXPECT_EQ(r.all_to_all_piece_cma, sizes_from(from)) << n << " ranks";
    }
  }
  // Each with a CPU: the usual ranges, whatever the share.
  EXPECT_EQ(copy_rules_for({.path = CopyPath::kStaged,
                            .cma = true,
                            .cma_for_collectives = true,
                            .group_size = 8,
                            .staged_all_to_all_piece_bytes = 128 * KiB})
                .all_to_all_piece_cma,
            (SizeRange{32 * KiB, 512 * KiB}));
}

// COLLIE_CMA=always: collectives read with CMA although the job is larger than
// the machine; p2p still counts ranks against CPUs.
TEST(CopyRules, P2pFollowsTheJobSizeAndCollectivesFollowCmaForCollectives) {
  const CopyRules r = copy_rules_for({.path = CopyPath::kHybrid,
                                      .cma = true,
                                      .cma_for_collectives = true,
                                      .group_size = 4,
                                      .oversubscribed = true});
  EXPECT_EQ(r.all_gather_cma, sizes_from(128 * KiB));
  EXPECT_EQ(r.all_to_all_piece_cma, sizes_from(128 * KiB));
  EXPECT_EQ(r.p2p_pull_from, kAny);
}

TEST(CopyRules, ManyReadersOfTheRootReadItWithCmaOnlyFromHugePages) {
  for (CopyPath path : {CopyPath::kStaged, CopyPath::kHybrid, CopyPath::kSingleCopy}) {
    const CopyRules r = rules(path, 5, true);  // 4 non-roots
    EXPECT_TRUE(r.broadcast_cma.empty());
    EXPECT_TRUE(r.scatter_cma.empty());
    EXPECT_FALSE(r.gather_cma.empty());  // the root reads many, no one reads the root
    EXPECT_TRUE(r.root_on_huge_pages.applies(16 * KiB, 2 * MiB));
    EXPECT_FALSE(r.root_on_huge_pages.applies(16 * KiB, 2 * MiB - 1));
  }
  EXPECT_FALSE(rules(CopyPath::kStaged, 4, true).root_on_huge_pages.applies(4 * MiB, 4 * MiB));
}

TEST(CopyRules, WithoutCmaEverythingStages) {
  for (CopyPath path : {CopyPath::kStaged, CopyPath::kHybrid, CopyPath::kSingleCopy}) {
    const CopyRules r =
        copy_rules_for({.path = path, .cma = false, .cma_for_collectives = false, .group_size = 2});
    EXPECT_EQ(r.path, CopyPath::kStaged);
    EXPECT_EQ(r.all_reduce_two_shot_from, 128 * KiB);
    for (const SizeRange& s : {r.all_reduce_cma, r.reduce_cma, r.all_gather_cma, r.gather_cma,
                               r.broadcast_cma, r.scatter_cma, r.all_to_all_piece_cma}) {
      EXPECT_TRUE(s.empty());
    }
    EXPECT_FALSE(r.root_on_huge_pages.applies(kAny - 1, kAny - 1));
    EXPECT_EQ(r.p2p_pull_from, kAny);
  }
}

TEST(CopyRules, ASingleRankGroupNeverReadsItsRootOnHugePages) {
  EXPECT_FALSE(rules(CopyPath::kStaged, 1, true).root_on_huge_pages.applies(64 * MiB, 64 * MiB));
}

}  // namespace
}  // namespace collie::detail
