// The layout of a rank's shared-memory segment for one group.
//
//   [ SegmentHeader | StepControl | kStepLines small slots | slot 0 | slot 1 |
//     (world only) n x RingControl | n x ring data ]
//
// Every field has exactly one writer: the owner writes its header, step flags and
// slots and the heads of its outgoing rings; peers only read them, except the
// tail of a ring, written by the ring's receiver. Flags that different ranks poll
// sit on separate cache lines.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backends/shm/doorbell.h"

namespace collie::detail {

inline constexpr uint64_t kSegmentMagic = 0x31454C4C4F43ull;  // "COLLE1"
inline constexpr uint32_t kMessageMagic = 0xC011E5E5u;
// A pulled message: the header is followed by the 8-byte address of the payload
// in the sender's memory instead of the payload (p2p.h).
inline constexpr uint32_t kPulledMessageMagic = 0xC011E5E6u;
// A pulled message whose payload lies in the sender's shared arena (arena.h):
// the header is followed by the 16-byte ArenaRef of the payload, which the
// receiver copies from its own mapping of that chunk, without CMA (p2p.h).
inline constexpr uint32_t kArenaPulledMessageMagic = 0xC011E5E7u;

struct SegmentHeader {
  std::atomic<uint64_t> magic{0};  // stored last (release): the segment is initialised
  pid_t pid = 0;
  int32_t world_rank = 0;
  int32_t group_rank = 0;
  int32_t nranks = 0;
  uint64_t group_id = 0;
  uint64_t slot_bytes = 0;
  uint64_t ring_bytes = 0;
  uint64_t cma_probe = 0;  // address of the owner's CMA probe word (cma.h)
  alignas(64) std::atomic<uint32_t> attached{0};  // owner has mapped every peer
  // The owner's CMA verdict: 0 not yet, 1 it read every peer's probe, 2 it could not,
  // 3 it read them and its CPU prefers single copies, 4 it read them and its CPU
  // is hybrid (copy_path.h).
  std::atomic<uint32_t> cma_verdict{0};
  alignas(64) Doorbell doorbell;                  // world segment: the process's doorbell
};

// What the owner publishes for one step, in one cache line: a peer waiting for
// the step reads the flag, the fingerprint and (for calls of at most
// kInlineBytes per rank) the data with a single cross-core transfer. Only the
// two words a peer compares (Fingerprint::same_call) are here; the call's
// sequence number, for error messages only, is in the step record. That gave
// the data 40 bytes instead of 32: 2 ranks' all_to_all of 64 B (counts and a
// 32-byte piece) fits a line, as do reductions of ten float32 elements.
inline constexpr size_t kInlineBytes = 40;
struct alignas(64) StepLine {
  std::atomic<uint64_t> step{0};  // the last step published here (k, k+2, ...)
  std::atomic<uint64_t> fingerprint[2] = {};
  uint8_t data[kInlineBytes] = {};
};
static_assert(sizeof(StepLine) == 64, "a step line is one cache line");

// The fingerprint of one step, kept longer than its step line: a rank that did
// not wait for its peers in an eager call (step_op.h) compares their calls from
// here, possibly several steps later.
struct StepRecord {
  std::atomic<uint64_t> step{0};  // the step these words are for
  std::atomic<uint64_t> fingerprint[3] = {};
};
static_assert(sizeof(StepRecord) == 32, "two step records per cache line");

// Step k uses line k % kStepLines, record k % kStepRecords, and for its data the
// line, small slot k % kStepLines or slot k % 2. So a rank may publish a step
// whose data fits its line or a small slot up to kStepLines - 1 steps ahead of
// its slowest peer (eager calls run ahead), one whose data needs a slot one step
// ahead. kStepRecords = 2 * kStepLines keeps a record until every rank can have
// compared it (step_op.cc).
//
// Why 32: with more ranks than cores, a root of small broadcasts (or a non-root
// of small reduces) makes up to 31 calls before it must wait for a peer to be
// scheduled, so one scheduling round (a few µs) is shared by that many calls.
// 4 ranks on 2 cores, back to back, 8 B: broadcast 1.1-2.3 -> 0.7-1.7 µs per call,
// reduce 1.2-2.5 -> 0.75-2.0 µs (medians 1.44 -> 1.09 and 1.55 -> 0.91; 8 lines
// against 32, six alternating runs). The cost: a mismatch in such a call is
// reported up to 33 calls later instead of 9, and 96 KiB more address space per
// rank and group (the small slots; untouched pages cost nothing).
inline constexpr size_t kStepLines = 32;
inline constexpr size_t kStepRecords = 2 * kStepLines;
inline constexpr size_t kSmallSlotBytes = 4096;

// all_to_all's slot: a header (2N counts, then kAllToAllWhereWords words: the
// input's address, arena chunk|present, arena offset; then the same three words
// for each destination's piece, used when the input is given piece by piece),
// 64-byte aligned, then N pieces of equal, 64-byte aligned size. Fixed per
// group: ShmGroup computes it once.
inline constexpr size_t kAllToAllWhereWords = 3;
inline constexpr size_t all_to_all_header_bytes(size_t nranks) {
  return ((2 * nranks + kAllToAllWhereWords * (1 + nranks)) * sizeof(uint64_t) + 63) / 64 * 64;
}
inline constexpr size_t all_to_all_piece_bytes(size_t slot_bytes, size_t nranks) {
  return (slot_bytes - all_to_all_header_bytes(nranks)) / nranks / 64 * 64;
}

// The owner's step flags. "The owner has published step k" is
// line[k % kStepLines].step >= k (the line cannot have moved on to a later step
// while a peer still waits for k: that needs the peer's own step k + 1).
struct StepControl {
  StepLine line[kStepLines];
  StepRecord record[kStepRecords];
  // How many transfers the owner's peers have made with its buffers, ever:
  // each peer adds one after it read a piece of the owner's input
  // (all_to_all's pulled pieces, the single-copy all_gather) or wrote its piece
  // into the owner's output (all_gather), so that the owner may return once
  // those peers are done, not once every rank is done with everything (in
  // groups of more than 2 ranks: ShmGroup::counts_transfers).
  alignas(64) std::atomic<uint64_t> transfers_done{0};
};

// One single-producer single-consumer byte ring from the owner to one destination.
struct RingControl {
  alignas(64) std::atomic<uint64_t> head{0};       // bytes written (owner)
  std::atomic<uint64_t> pulls_cancelled{0};        // pulled messages given up on (owner)
  alignas(64) std::atomic<uint64_t> tail{0};       // bytes consumed (destination)
  std::atomic<uint64_t> pulls_done{0};             // pulled messages read (destination)
};

// Header of a point-to-point message in a ring.
struct MessageHeader {
  uint32_t magic;
  uint32_t dtype;
  int64_t tag;
  uint64_t group_id;
  uint64_t nbytes;
};
static_assert(sizeof(MessageHeader) == 32, "message headers are 32 bytes");

struct SegmentLayout {
  size_t step_control = 0;
  size_t small_slots = 0;
  size_t slots = 0;
  size_t ring_controls = 0;
  size_t ring_data = 0;
  size_t total = 0;

  SegmentLayout(int nranks, size_t slot_bytes, size_t ring_bytes, bool with_rings) {
    auto align = [](size_t v, size_t a) { return (v + a - 1) / a * a; };
    step_control = align(sizeof(SegmentHeader), 64);
    small_slots = align(step_control + sizeof(StepControl), 4096);
    slots = small_slots + kStepLines * kSmallSlotBytes;
    size_t end = slots + 2 * slot_bytes;
    if (with_rings) {
      ring_controls = align(end, 64);
      ring_data = align(ring_controls + static_cast<size_t>(nranks) * sizeof(RingControl), 4096);
      end = ring_data + static_cast<size_t>(nranks) * ring_bytes;
    }
    total = align(end, 4096);
  }
};

}  // namespace collie::detail
