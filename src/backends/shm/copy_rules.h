// copy_rules.h — one group's table of which transfers take a single copy (read
// from the peer's tensor with CMA, cma.h) and which go through the slots and
// rings, by operation and size. Every place that chooses reads its row here, so
// the choices of a copy path (copy_path.h) sit in one function, copy_rules_for(),
// instead of in branches at each call site.
//
// The table (bytes per rank, per message or per all_to_all piece; a range
// [from, below); "-": never; n: group size; "each": every rank has a CPU, so
// collectives may read with CMA (ShmGroup::cma_for_collectives); "over": more
// ranks than CPUs):
//
//                         staged             hybrid             single copy
//   all_reduce two-shot   from 128K (n>2:    from 128K          from 8K (n>2: 16K)
//                         256K)
//   all_reduce CMA each   -                  128K-64M           128K-64M
//                  over   -                  2M-64M             -
//   reduce CMA     each   -                  from 2M            from 32K
//                  over   -                  from 2M, above     -
//                                            n x 256K
//   all_gather CMA each   64K-8M             from 128K          8K-32M
//                  over   -                  2M-32M             -
//   gather CMA     each   64K-8M             from 128K          16K-32M
//                  over   -                  from 512K          -
//   broadcast CMA  each   64K-8M             from 128K          from 16K
//                  over   -                  2M-32M             2M-32M
//   scatter CMA    each   as gather          as gather          as gather
//                  over   -                  from two staged    -
//                                            steps (2 x 1M/n),
//                                            512K at most
//   broadcast and scatter with more than 3 readers of the root (n - 1 > 3,
//   kCmaMaxReadersOfOneProcess, direct_ops.h): "each" none.
//   broadcast and scatter otherwise staged, read with CMA where the root's input
//   lies on huge pages: "each" with at most 3 readers, staged from 8M; with
//   more, every path from 2M of the root's input.
//   all_to_all     each   32K-512K (beyond   from 128K          from 16K
//     piece CMA           on huge pages)
//                  over   from two staged    as staged          from 128K
//                         steps (2 x ~1M/n),
//                         512K at most
//   p2p pull       each   beyond the ring    from 128K          from 16K
//                         on huge pages
//                  over   beyond the ring    beyond the ring    from 128K
// (p2p's "each" and "over" count the job's ranks against the CPUs whatever
// COLLIE_CMA says; the collectives' follow cma_for_collectives.)
//
// The measurements behind each number are beside the mechanism it tunes:
// direct_ops.h (the CMA collectives), collectives.cc (two-shot), all_to_all_op.cc
// (pieces), p2p.h (pulls), copy_path.h (which CPU takes which column).
// Environment overrides (COLLIE_ALLREDUCE_ALGO, COLLIE_P2P_PULL) and the shared
// arena's own thresholds stay at their call sites: they are not the copy path's.
//
//   const CopyRules& r = group.copy_rules();
//   if (r.all_gather_cma.contains(bytes)) { ... read each peer with CMA ... }
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/shm/copy_path.h"

namespace collie::detail {

// Transfer sizes [from, below), in bytes.
struct SizeRange {
  static constexpr size_t kUnbounded = ~size_t{0};
  size_t from = kUnbounded;
  size_t below = kUnbounded;

  bool contains(size_t bytes) const { return bytes >= from && bytes < below; }
  bool empty() const { return from >= below; }
  bool operator==(const SizeRange&) const = default;
};

inline constexpr SizeRange kNoSizes{};
inline constexpr SizeRange sizes_from(size_t from) { return {from, SizeRange::kUnbounded}; }

// What a group's table depends on; the same on every member.
struct CopyRulesInput {
  CopyPath path = CopyPath::kStaged;  // agreed at rendezvous (shm_group.cc)
  bool cma = false;                   // every member can read every other's memory
  bool cma_for_collectives = false;   // ... and collectives may (shm_group.h)
  int group_size = 1;
  bool oversubscribed = false;  // more ranks in the job than CPUs (decides p2p)
  // What one staged step carries per rank (ShmGroup::piece_bytes: the slot over
  // the group's size) and per pair of an all_to_all (all_to_all_piece_bytes);
  // 0: unknown.
  size_t staged_piece_bytes = 0;
  size_t staged_all_to_all_piece_bytes = 0;
};

// Where a broadcast or scatter that the table otherwise stages reads the root's
// input with CMA if it lies on huge pages (cma_if_huge_pages.h): from
// `per_rank_from` bytes per rank and `root_input_from` bytes of the root's input.
struct RootOnHugePagesRule {
  size_t per_rank_from = SizeRange::kUnbounded;
  size_t root_input_from = SizeRange::kUnbounded;

  bool applies(size_t per_rank, size_t root_input) const {
    return per_rank >= per_rank_from && root_input >= root_input_from;
  }
  bool operator==(const RootOnHugePagesRule&) const = default;
};

struct CopyRules {
  CopyPath path = CopyPath::kStaged;
  // Staged all_reduce: two-shot (reduce-scatter then all-gather) from here.
  size_t all_reduce_two_shot_from = SizeRange::kUnbounded;
  // Private tensors read with CMA (bytes per rank).
  SizeRange all_reduce_cma;
  SizeRange reduce_cma;
  SizeRange all_gather_cma;
  SizeRange gather_cma;
  SizeRange broadcast_cma;
  SizeRange scatter_cma;
  RootOnHugePagesRule root_on_huge_pages;
  // all_to_all pieces (bytes between one pair) read with CMA; those of `below`
  // or more too where the sender's input lies on huge pages (all_to_all_op.cc).
  SizeRange all_to_all_piece_cma;
  // Point-to-point messages the receiver pulls with CMA from this size
  // (kUnbounded: the staged rule, p2p.cc's pull_rule).
  uint64_t p2p_pull_from = SizeRange::kUnbounded;
};

CopyRules copy_rules_for(const CopyRulesInput& in);

}  // namespace collie::detail
