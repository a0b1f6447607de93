#include "backends/shm/copy_rules.h"

#include <algorithm>

#include "backends/shm/direct_ops.h"
#include "backends/shm/p2p.h"

namespace collie::detail {
namespace {

// all_reduce's two-shot thresholds (measured in collectives.cc, above
// use_two_shot).
constexpr size_t kTwoShotFromBytes2Ranks = 128u << 10;
constexpr size_t kTwoShotFromBytes = 256u << 10;
constexpr size_t kTwoShotFromBytes2RanksSingleCopy = 8u << 10;
constexpr size_t kTwoShotFromBytesSingleCopy = 16u << 10;

// all_to_all pieces read with CMA (measured in all_to_all_op.cc's header).
constexpr size_t kCmaPairMin = 32u << 10;
constexpr size_t kCmaPairMinSingleCopy = 16u << 10;
constexpr size_t kCmaPairMinOversubscribed = 512u << 10;
constexpr size_t kCmaPairMinOversubscribedSingleCopy = 128u << 10;
constexpr size_t kCmaPairMax = 512u << 10;

// With more ranks than CPUs each staged step waits for every rank to be
// scheduled: a transfer whose staged path takes two whole steps of `share`
// bytes or more reads with CMA, and from `at_most` where that is less (scatter
// and all_to_all's pieces: direct_ops.h, all_to_all_op.cc's header). A share
// of 0 is unknown.
size_t from_two_staged_steps(size_t share, size_t at_most) {
  return share == 0 ? at_most : std::min(at_most, 2 * share);
}

// The rules of a group that stages: CMA only for mid-sized data movers, and
// for large ones whose source lies on huge pages.
void stage(const CopyRulesInput& in, bool few_readers, CopyRules& r) {
  r.all_reduce_two_shot_from = in.group_size == 2 ? kTwoShotFromBytes2Ranks : kTwoShotFromBytes;
  if (in.cma_for_collectives) {
    const SizeRange mid{kCmaMinBytes, kCmaMaxBytes};
    r.all_gather_cma = mid;
    r.gather_cma = mid;
    if (few_readers) {
      r.broadcast_cma = mid;
      r.scatter_cma = mid;
      if (in.group_size > 1) r.root_on_huge_pages = {kCmaMaxBytes, 0};
    }
  }
  if (in.cma) {
    r.all_to_all_piece_cma =
        in.cma_for_collectives ? SizeRange{kCmaPairMin, kCmaPairMax}
                               : sizes_from(from_two_staged_steps(in.staged_all_to_all_piece_bytes,
                                                                  kCmaPairMinOversubscribed));
  }
}

// The rules of a group whose every member prefers single copies (copy_path.h);
// a hybrid group raises each minimum to kHybridSingleCopyMinBytes (`floor`).
void single_copy(const CopyRulesInput& in, size_t floor, CopyRules& r) {
  const auto at_least = [floor](size_t bytes) { return std::max(bytes, floor); };
  const size_t two_shot =
      in.group_size == 2 ? kTwoShotFromBytes2RanksSingleCopy : kTwoShotFromBytesSingleCopy;
  r.all_reduce_two_shot_from = at_least(two_shot);
  if (in.cma_for_collectives) {
    r.all_reduce_cma = {at_least(kCmaAllReduceMinBytes), kCmaAllReduceMaxBytes};
    r.reduce_cma = sizes_from(at_least(kCmaReduceMinBytes));
    r.all_gather_cma = {at_least(kCmaAllGatherMinBytesSingleCopy), kCmaMaxBytesSingleCopy};
    r.gather_cma = {at_least(kCmaMinBytesSingleCopy), kCmaMaxBytesSingleCopy};
    r.broadcast_cma = sizes_from(at_least(kCmaMinBytesSingleCopy));
    r.scatter_cma = r.gather_cma;
    r.all_to_all_piece_cma = sizes_from(at_least(kCmaPairMinSingleCopy));
  } else {
    r.broadcast_cma = {kCmaBroadcastMinBytesOversubscribed, kCmaBroadcastMaxBytesOversubscribed};
    r.all_to_all_piece_cma = sizes_from(kCmaPairMinOversubscribedSingleCopy);
  }
  r.p2p_pull_from = at_least(in.oversubscribed ? P2PMatcher::kPullFromBytesOversubscribed
                                               : P2PMatcher::kPullFromBytes);
}

// Hybrid: single-copy rules from kHybridSingleCopyMinBytes, with the exceptions
// measured on AMD Zen 5 (direct_ops.h, copy_path.h).
void hybrid(const CopyRulesInput& in, CopyRules& r) {
  single_copy(in, kHybridSingleCopyMinBytes, r);
  if (in.cma_for_collectives) {
    r.reduce_cma = sizes_from(kCmaReduceMinBytesHybrid);
    r.all_gather_cma.below = SizeRange::kUnbounded;
    r.gather_cma.below = SizeRange::kUnbounded;
    r.scatter_cma.below = SizeRange::kUnbounded;
  } else {
    r.all_reduce_cma = {kCmaOversubscribedHybridMinBytes, kCmaAllReduceMaxBytes};
    r.reduce_cma = sizes_from(
        std::max(kCmaReduceOversubscribedHybridMinBytes,
                 static_cast<size_t>(in.group_size) * kCmaReduceOversubscribedMinSliceBytes + 1));
    r.all_gather_cma = {kCmaOversubscribedHybridMinBytes, kCmaMaxBytesSingleCopy};
    r.gather_cma = sizes_from(kCmaRootedOversubscribedHybridMinBytes);
    r.scatter_cma = sizes_from(
        from_two_staged_steps(in.staged_piece_bytes, kCmaRootedOversubscribedHybridMinBytes));
    r.all_to_all_piece_cma = sizes_from(  // as staged
        from_two_staged_steps(in.staged_all_to_all_piece_bytes, kCmaPairMinOversubscribed));
  }
  if (in.oversubscribed) r.p2p_pull_from = SizeRange::kUnbounded;  // as staged
}

}  // namespace

CopyRules copy_rules_for(const CopyRulesInput& in) {
  CopyRules r;
  r.path = in.cma ? in.path : CopyPath::kStaged;  // single copies need CMA
  const bool few_readers = in.group_size - 1 <= kCmaMaxReadersOfOneProcess;
  switch (r.path) {
    case CopyPath::kStaged:
      stage(in, few_readers, r);
      break;
    case CopyPath::kHybrid:
      hybrid(in, r);
      break;
    case CopyPath::kSingleCopy:
      single_copy(in, 0, r);
      break;
  }
  // Many readers of one root queue on its pages (direct_ops.h): each reads it
  // with CMA only where its input lies on huge pages. With more ranks than CPUs
  // no more of them than CPUs read at once, and broadcast and scatter keep the
  // rules above (measured at 4, 8 and 16 ranks on 2 CPUs: direct_ops.h).
  if (!few_readers && in.cma_for_collectives) {
    r.broadcast_cma = kNoSizes;
    r.scatter_cma = kNoSizes;
    r.root_on_huge_pages = {0, kCmaIfRootOnHugePagesMinBytes};
  }
  return r;
}

}  // namespace collie::detail
