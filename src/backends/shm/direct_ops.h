// Single-copy collectives on tensors in the shared arena (arena.h).
//
// When every rank's input and output live in the arena (collie::empty_shared),
// a collective needs no staging: in step 0 each rank publishes where its buffers
// are, then reads its peers' inputs and writes its peers' outputs directly; step
// 1 only waits until every peer is done with this rank's buffers, so that none of
// them is reused or freed while a peer still touches it. Two steps whatever the
// size, and each byte is copied once (the staged path copies it in, then out).
//
// The work is split so that every rank does 1/N of it where that is possible:
// all_reduce (each rank reduces one slice of the N inputs and writes it into
// all N outputs), reduce (each reduces one slice into the root's output; with
// CMA at 2 ranks the root's slice is the larger, direct_ops.cc) and gather
// (each writes its own piece into the root's output). The others pull what
// their own output needs. Reductions read the inputs in group-rank order, so
// results are bitwise identical to the staged path's.
//
// all_gather from 64 KiB per rank moves the data it shares with each rank as
// soon as that rank's step 0 shows, not once every rank's has (step_op.h,
// "Ranks handled as they come"; 4 ranks on 2 cores after a barrier, from the
// last rank's start, 16 MiB gathered: 1.8-2.7 -> 1.4-1.5 ms), and its step 1
// waits only until every peer has read this rank's input or written into its
// output (each adds one to its transfers_done, layout.h), not until every rank
// is done with every other.
//
// A rank with shared tensors marks the call in its fingerprint, so if another
// rank passed private memory for the same call, every rank fails with a message
// naming who did what (like a dtype mismatch) instead of mixing protocols.
//
// The same two steps move private tensors with CMA: step 0 publishes addresses
// instead of arena locations, every read is a process_vm_readv from the owner
// and every write a process_vm_writev into it (gather's pieces too, each
// written by its owner). all_reduce and reduce split the reduction as above:
// each rank reads its slice of the peers' inputs a piece at a time, reduces it
// with its own input and writes the result into the outputs that need it while
// it is in cache.
//
// A rank that gives up on such a call (a timeout, a dead peer) cannot stop a
// slow peer that is still reading or writing its buffers, so its Work then keeps
// them allocated for good (Work::retain_on_failure) instead of letting a late
// write land in memory that holds something else by then.
#pragma once

#include <memory>
#include <vector>

#include "backends/shm/arena.h"
#include "backends/shm/collectives.h"

namespace collie::detail {

// Calls smaller than this (bytes per rank) take the staged path even on shared
// tensors: one step beats two when the copies are tiny. all_to_all, whose sizes
// differ per rank, decides per piece instead (collectives.h).
inline constexpr size_t kDirectMinBytes = 16u << 10;

// Ordinary (private) tensors of kCmaMinBytes to kCmaMaxBytes per rank are moved
// with process_vm_readv (cma.h) by the ops that only move data (all_gather,
// broadcast, gather, scatter), where the group agreed CMA works: one copy through
// the kernel instead of two through the slots (2 ranks, 2 MiB all_gather: 88 ->
// 53 us). Below, the slots' lower latency wins; above, their streaming stores do
// (the kernel's copy reads every destination line first), from kCmaMaxBytes, or
// from kCmaMaxBytesSingleCopy where the group prefers single copies (copy_path.h;
// Intel Xeon, 2 ranks, broadcast of 16 MiB: 2.2 ms staged, 1.5 ms with CMA, but
// 64 MiB 8.9 against 11.4 ms). Broadcast has no such limit there since its
// tensors sit on huge pages (core/block_cache.h): 32 MiB 4.3-4.4 -> 2.3-2.5 ms
// (4.5-4.6 -> 3.4-3.5 written just before), 64 MiB 8.8-9.0 -> 7.7-8.3, 128 MiB
// even (written before, 20.5 -> 18.8). all_gather of 32 and 64 MiB per rank
// stays staged: 6.5-6.8 against 6.6-7.2 ms, 14.4-15.5 against 15.3-15.5.
// Where the group stages, broadcast and scatter from kCmaMaxBytes take CMA too
// when the root's input lies on huge pages (cma_if_huge_pages.h).
// Where the group prefers single copies, from kCmaMinBytesSingleCopy (Intel Xeon,
// 2 ranks, broadcast of 32 KiB: 5.9 -> 2.2 us, 5.8 -> 4.3 with inputs written
// just before each call; all_gather of 32 KiB per rank 6.1 -> 3.3 us, 6.1 ->
// 6.8 written before; 16 KiB per rank: within 10 % written before, 1.8-2.3x
// faster clean).
// Where the group is hybrid (copy_path.h), all_gather has no upper limit (AMD
// Zen 5 VM, 2 ranks: 32 MiB per rank staged 4.5-4.6 ms, with CMA 3.2-3.4,
// OpenMPI 3.1; 64 MiB 9.3-9.4 against 6.3), nor has gather, whose non-roots
// write their pieces into the root (DirectGather; 2 ranks, alternating
// launches, 32 MiB per rank staged 4.6-5.9 ms, with CMA 1.85-2.09, OpenMPI
// 3.57-3.80; 64 MiB 10.0-11.3 against 4.0-4.1, OpenMPI 7.4-8.7), nor scatter
// (32 MiB per rank staged 2.94-3.09 ms, with CMA 2.15-2.20, OpenMPI 3.6-3.9;
// 64 MiB 6.1-6.5 against 4.7-5.1, OpenMPI 8.2-9.4).
// all_gather from kCmaAllGatherMinBytesSingleCopy there: its staged step hands
// data both ways at once, and 8 KiB per rank reads clean inputs 2.9 -> 1.8 us
// (OpenMPI 2.6), 2.94 -> 3.07 us written just before (OpenMPI 3.37); at 4 KiB
// 1.70 -> 1.72 clean, 1.68 -> 2.40 written. Broadcast keeps 16 KiB: at 8 KiB
// 1.93 -> 1.27 us clean but 1.91 -> 2.43 written (OpenMPI 3.2 and 3.0).
inline constexpr size_t kCmaMinBytes = 64u << 10;
inline constexpr size_t kCmaMinBytesSingleCopy = 16u << 10;
inline constexpr size_t kCmaAllGatherMinBytesSingleCopy = 8u << 10;
inline constexpr size_t kCmaMaxBytes = 8u << 20;
inline constexpr size_t kCmaMaxBytesSingleCopy = 32u << 20;
inline constexpr size_t kNoLimit = ~size_t{0};

// With more ranks than CPUs collectives stage (shm_group.h, cma_for_collectives),
// but for a broadcast of kCmaBroadcastMinBytesOversubscribed to
// kCmaBroadcastMaxBytesOversubscribed where the group agreed on CMA and prefers
// single copies: its non-roots make one read each, and the staged steps' many
// rounds of every rank being scheduled cost more once tensors sit on huge
// pages. 4 ranks on 2 cores, Intel Xeon: 2 MiB 483-522 -> 348-431 us (written
// just before the call 640 -> 504-528), 8 MiB 1.96-1.99 -> 1.18-1.34 ms (2.0-2.4
// -> 1.86), 16 MiB 3.8-4.1 -> 2.5-2.9; 32 MiB even (7.6-7.9 against 7.7-8.6),
// 64 MiB staged (16.9-17.4 against 17.6-18.7); 512 KiB 92 against 75-107 us.
// all_gather, whose every rank reads, loses (2 MiB 333-347 against 417 us).
inline constexpr size_t kCmaBroadcastMinBytesOversubscribed = 2u << 20;
inline constexpr size_t kCmaBroadcastMaxBytesOversubscribed = 32u << 20;

// Where such a group is hybrid (copy_path.h), all_reduce and all_gather from
// kCmaOversubscribedHybridMinBytes per rank, and reduce from
// kCmaReduceOversubscribedHybridMinBytes, read with CMA too, up to the limits
// they have where every rank has a CPU. AMD Zen 5 VM, 4 ranks on 2 cores, best
// of three rounds (µs, staged -> CMA): all_reduce 1 MiB 176 -> 268, 2 MiB 369
// -> 287, 8 MiB 1,944 -> 1,630, 32 MiB 8,166 -> 6,899; reduce 512 KiB 83 ->
// 119, 1 MiB 333 -> 193, 2 MiB 641 -> 223 (OpenMPI 273-279), 8 MiB 1,502 ->
// 1,060; all_gather 1 MiB per rank 245 -> 607, 2 MiB 807 -> 553, 8 MiB
// 3,862 -> 3,452. Not measured on Intel, where all_gather of 2 MiB per rank
// lost with CMA (above), so single-copy groups keep staging.
inline constexpr size_t kCmaOversubscribedHybridMinBytes = 2u << 20;
// Since the fifty-fifth session's eager staged reduce (step_op.h) the staged
// path wins more: reduce with CMA there from kCmaReduceOversubscribedHybridMinBytes
// (the inputs' huge pages, core/block_cache.h) and once each rank's slice is
// more than one chunk of its reduction, kCmaReduceOversubscribedMinSliceBytes
// (fifty-ninth session, roots rotating, alternating launches, median µs,
// staged against CMA, OpenMPI in brackets: 4 ranks, 1 MiB 127-159 against
// 248-286 (408-447), 1.5 MiB 292-301 against 449-472 (inputs on 4 KiB
// pages), 2 MiB 318-417 against 246-297 (427-515); 8 ranks, 2 MiB 557-568
// against 674-678 (1,273-1,341), 3 MiB 1,391-1,398 against 1,219-1,242, 8 MiB
// 3,877-4,215 against 3,261-3,358 (7,890-10,392); 16 ranks, 2 MiB
// 1,101-1,355 against 2,212-2,372 (2,112-2,313), 4 MiB 4,164-6,342 against
// 4,177-4,179, 8 MiB 49,053-49,374 against 9,081-11,825 (88,680-91,555)).
inline constexpr size_t kCmaReduceOversubscribedHybridMinBytes = 2u << 20;
inline constexpr size_t kCmaReduceOversubscribedMinSliceBytes = 256u << 10;

// gather and scatter there from kCmaRootedOversubscribedHybridMinBytes per
// rank, at any size above (fiftieth session, AMD Zen 5 VM, 4 ranks on 2 cores,
// roots rotating, alternating launches, µs, staged -> CMA): gather 512 KiB
// per rank 68-80 -> 63-98, 1 MiB 288-323 -> 121-128, 2 MiB 735-815 -> 241-268,
// 8 MiB 3,044-3,388 -> 1,218-1,370 (OpenMPI 254, 542, 607, 1,869); scatter
// 512 KiB 87-109 -> 60-68, 1 MiB 208-214 -> 109-114, 2 MiB 432-518 ->
// 203-215, 8 MiB 2,384-2,484 -> 1,134-1,188 (OpenMPI 51, 146, 519, 1,688).
// From 8 and 32 KiB per rank CMA took twice as long as the slots.
// scatter from less where a staged step carries less (ShmGroup::piece_bytes,
// the 1 MiB slot over the group's size): from two whole steps, as its staged
// path costs a round of every rank being scheduled per step (fifty-ninth
// session, same VM, 2 CPUs, roots rotating, alternating launches, median µs,
// staged / CMA / OpenMPI): 4 ranks (a step: 256 KiB per rank), 128 KiB 16 /
// 35 / 34, 256 KiB 30 / 47-51 / 55-59, 384 KiB 58-64 / 68-77 / 79-81;
// 8 ranks (128 KiB), 64 KiB 40 / 53-56 / 59-61, 128 KiB 49-50 / 67-68 /
// 75-87, 192 KiB 119-124 / 87-111 / 107-126, 256 KiB 137-193 / 64-65 / 68-92, 512 KiB 360-370 /
// 62-109 / 97-129, 1 MiB 784-917 / 98-203 / 459-486, 4 MiB 7,245-8,222 / 655-816 / 1,725-1,948; 16
// ranks (64 KiB), 64 KiB 122-157 / 126-151 / 148-163, 128 KiB 366-375 / 126-135 / 141-154, 256 KiB
// 721-852 / 141-147 / 168-247, 1 MiB 7,799-8,751 / 144-322 / 1,112-1,248. With more readers than
// kCmaMaxReadersOfOneProcess scatter staged before at every size (below): no
// more readers than CPUs run at once, and each reads pages of its own.
inline constexpr size_t kCmaRootedOversubscribedHybridMinBytes = 512u << 10;

// One process's pages, read by many ranks at once. On a 16-core Intel Xeon
// (private tensors on 4 KiB pages; thirtieth session, docs/performance.md),
// a broadcast read with CMA took time in proportion to its readers, ~0.44 us per
// page and reader, as if they queued on one lock (the kernel pins each 4 KiB
// page it copies under the owner's page-table lock, one per 2 MiB of address
// space): 1 MiB 324 us at 4 ranks, 820 at 8, 1,724 at 16 (OpenMPI 601); 16 KiB
// 8.8, 19 and 41 us. The root's 4 MiB on huge pages (a lock and a pin per 2 MiB)
// took 330, 359 and 544 us. So:
//   - ops that read many peers take them in turn from the next rank on
//     (all_gather, all_to_all's pulled pieces, the CMA reductions' reads and
//     writes), never every rank the same peer first;
//   - broadcast and scatter, whose non-roots all read the root, read it with CMA
//     on any pages only with at most kCmaMaxReadersOfOneProcess non-roots (4
//     ranks: 1.31-1.54x OpenMPI from 16 KiB to 1 MiB); with more, only where the
//     root's input (from kCmaIfRootOnHugePagesMinBytes) lies on huge pages
//     (cma_if_huge_pages.h), and otherwise they stage; with more ranks than
//     CPUs, which bounds the readers at once, as with few (above);
//   - gather's non-roots write their pieces into the root's output with CMA
//     only when there are at most kCmaMaxReadersOfOneProcess of them (writers
//     pin the root's pages as readers do), or more ranks than CPUs (which bounds
//     the writers at once: direct_ops.cc, DirectGather); otherwise the root
//     reads them in turn.
inline constexpr int kCmaMaxReadersOfOneProcess = 3;
inline constexpr size_t kCmaIfRootOnHugePagesMinBytes = 2u << 20;

// Reductions on private tensors take CMA only where the group prefers single
// copies (copy_path.h), from these sizes per rank: all_reduce up to
// kCmaAllReduceMaxBytes, reduce at any size above.
// Intel Xeon, 2 ranks, inputs written just before each call (clean inputs in
// brackets): all_reduce 256 KiB 25 -> 21 us (27 -> 15), 1 MiB 153 -> 118
// (140 -> 76), 8 MiB 1.35 -> 1.12 ms (1.32 -> 1.01); at 64 KiB the two staged
// steps win (6.9 against 7.4 us). reduce 32 KiB 5.3 -> 4.8 us (5.2 -> 3.7),
// 256 KiB 32 -> 21 (33 -> 15). Before tensors sat on huge pages (core/block_cache.h)
// the staged path's streaming stores won from 16 MiB; since, CMA wins up to
// 32 MiB: all_reduce 16 MiB 2.6 -> 1.7-1.8 ms (2.6 -> 1.4), 32 MiB even
// (5.5-5.8 -> 4.7-4.8), 64 MiB staged 12.1-12.2 against 12.5-12.8 (12.4-12.9
// against 12.3-12.5); reduce 16 MiB 2.1-2.4 -> 1.3-1.7 ms (1.8 -> 1.1-1.2),
// 64 MiB 12.8-12.9 -> 10.6-11.7 (11.5-13.3 -> 10.3-11.3).
// Where the group is hybrid (copy_path.h), reduce from kCmaReduceMinBytesHybrid:
// its staged steps overlap the non-roots' copies with the root's reduction and
// win up to a few MiB, then fall off a cliff (AMD Zen 5 VM, 2 ranks, staged
// against CMA: 1 MiB 44-45 against 64-75 us, 2 MiB 85-87 against 92, 4 MiB
// 155-158 against 187 in some runs and 227-572 in others, 5.8 MiB 790-808
// against 270). Since the root reduces 3/5 of a 2-rank call (direct_ops.cc):
// 2 MiB staged 91-96 against 89-94 us, 4 MiB 656-674 against 169-170
// (fiftieth session, alternating launches; 1 MiB staged 46-48 us, while CMA
// from 4 KiB pages took 90-114).
inline constexpr size_t kCmaAllReduceMinBytes = 128u << 10;
inline constexpr size_t kCmaReduceMinBytes = 32u << 10;
inline constexpr size_t kCmaReduceMinBytesHybrid = 2u << 20;
inline constexpr size_t kCmaAllReduceMaxBytes = 64u << 20;

// This rank's input and output: in the arena (refs locate them; out_ref.present
// == 0 where the rank has no output, e.g. a non-root of reduce), or, with `cma`,
// private memory that peers read by address with process_vm_readv (the refs'
// offsets are then addresses in this process).
struct DirectBuffers {
  const void* in;
  ArenaRef in_ref;
  void* out;
  ArenaRef out_ref;
  bool cma = false;
};

// DirectBuffers for private memory read through CMA.
DirectBuffers cma_buffers(const void* in, void* out);

std::unique_ptr<OpState> make_direct_all_reduce(CollectiveCall c, DirectBuffers b, size_t count,
                                                DType dtype, ReduceOp op);
std::unique_ptr<OpState> make_direct_reduce(CollectiveCall c, DirectBuffers b, size_t count,
                                            DType dtype, ReduceOp op, int root);
std::unique_ptr<OpState> make_direct_broadcast(CollectiveCall c, DirectBuffers b, size_t count,
                                               DType dtype, int root);
std::unique_ptr<OpState> make_direct_all_gather(CollectiveCall c, DirectBuffers b, size_t count,
                                                DType dtype);
std::unique_ptr<OpState> make_direct_gather(CollectiveCall c, DirectBuffers b, size_t count,
                                            DType dtype, int root);
std::unique_ptr<OpState> make_direct_reduce_scatter(CollectiveCall c, DirectBuffers b,
                                                    size_t count, DType dtype, ReduceOp op);
std::unique_ptr<OpState> make_direct_scatter(CollectiveCall c, DirectBuffers b, size_t count,
                                             DType dtype, int root);
}  // namespace collie::detail
