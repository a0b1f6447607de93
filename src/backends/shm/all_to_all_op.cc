// all_to_all over the shared-memory slots (make_all_to_all in collectives.h).
//
// Every step's slot holds a header (the 2N send and receive counts, then where
// the input is, read in step 0; for an input given piece by piece,
// AllToAllInput, where each destination's piece is) and N pieces, one per
// destination. Step 0 carries the counts and the first piece of data together:
// every rank checks the whole matrix (what i sends to j must be what j expects
// from i; a mismatch fails on every rank alike, before any data is read), then
// takes its data, and the matrix says how many more steps the largest piece
// needs. So a call whose pieces fit one slot is one step.
//
// A rank whose counts and pieces fit its step line (kInlineBytes, with the
// counts one or two bytes wide) writes its step 0 there, *compact*, and leaves
// its slot alone: a peer then reads the rank's flag, counts and data in one
// cache line instead of the line, the slot's header and a piece (2 ranks, 8 B:
// three cross-core transfers, in two rounds, became one). A rank whose counts
// alone fit the line, and none of whose pieces is read from its input (below),
// writes the counts there and the pieces into its slot, without the slot's
// header: a peer reads the line and its piece, two transfers instead of three
// (2 ranks, 64 B-2 KiB). A rank whose 2N counts are all one count
// (all_to_all_single's even split, the usual call) writes it once in either
// form, *uniform* (kUniform): when every rank's line says uniform with the same
// count, the matrix agrees without being filled or compared. The line's first byte says
// which form a rank chose (its counts' width, with kPiecesInSlot for the second
// or kUniform; 0 for the slot), so
// each rank chooses alone, by its own counts: the counts of all_to_all_v differ
// per rank, and no choice they feed could be agreed before the matrix is read.
// Only step 0 carries counts: later steps hold pieces only.
//
// Some pieces skip the slots: the receiver reads them from the sender's input in
// step 0 (one copy instead of two), and a second step makes sure every read of
// a rank's input finished before it returns (and frees its input): each reader
// adds one to the sender's transfers_done (layout.h) after its read, and where
// the second step carries no staged data a rank waits in it only for that
// count, not for every rank to have read everything:
//   - where the group agreed on CMA, pieces of kCmaPairMin to kCmaPairMax bytes,
//     read with process_vm_readv (2 ranks, 128 KiB-512 KiB per rank: about 1.5x
//     faster), larger ones too where the sender's input lies on huge pages
//     (huge_page_probe.h; its header says so, so the receiver agrees: AMD EPYC,
//     2 ranks, 4 MiB pieces: 0.69x OpenMPI -> 1.0-1.1x (0.57-0.61 ms); on 4
//     KiB pages process_vm_readv's pinning costs more than staging saves), and
//     where it prefers single copies (copy_path.h) larger ones on any pages
//     (Intel Xeon, 2 ranks, 4 MiB: 437 -> 388 us, OpenMPI 358-393) and from
//     kCmaPairMinSingleCopy (16 KiB pieces: 3.6 -> 2.5 us, the same with inputs
//     written just before the call; 8 KiB: 2.3 -> 2.0 us, but 2.4 -> 2.9 so),
//     from kHybridSingleCopyMinBytes where it is hybrid (AMD Zen 5, 2 ranks:
//     32 KiB pieces 6.0 us with CMA against 3.2 staged);
//     with more ranks than CPUs (where collectives otherwise stage: shm_group.h)
//     pieces from kCmaPairMinOversubscribed, which take several staged steps,
//     each waiting for every rank to be scheduled (4 ranks on 2 cores, 2 MiB
//     pieces: 2.8 -> 1.9 ms; 128 KiB ones gained nothing on the AMD machine),
//     or from the size that takes two whole staged steps where that is less
//     (more than 4 ranks; fifty-ninth session, same machine, median µs, staged
//     -> CMA, OpenMPI in brackets: 8 ranks, 256 KiB pieces 650-664 -> 389-471
//     (393-398), 128 KiB 312-314 against 365-397 (429-516); 16 ranks, 128 KiB
//     1,762-1,905 -> 1,189-1,223 (1,489-1,626), 256 KiB 4,636-5,286 ->
//     2,218-3,198 (2,346-2,597), 64 KiB even; 4 ranks, 256 KiB 125-126
//     against 160-162 (173)),
//     and where the group prefers single copies from
//     kCmaPairMinOversubscribedSingleCopy (Intel Xeon, 4 ranks on 2 cores, best
//     of three rounds in each of three sweeps: 128 KiB pieces 89-99 -> 69-75 us,
//     OpenMPI 55-61; 256 KiB 263-275 -> 231-251 us; 64 KiB pieces 30 -> 32 us,
//     so not from there), but not where it is hybrid (copy_path.h). These
//     sizes are the all_to_all row of the group's table (copy_rules.cc);
//   - when every rank's input is in the shared arena (`shared_input`), pieces of
//     kSharedPairMin bytes and more, read from the mapped arena. Small calls on
//     shared tensors stay a single step.
// Which pairs are read that way depends only on their count and the sender's
// pages, which sender and receiver agree on (the count check runs first).
// Where pieces may be pulled, a rank copies its own piece and reads a sender's
// piece as soon as that sender's step 0 shows, if the two agree on its count
// (consume_arrived; step_op.h, "Ranks handled as they come"): 4 ranks on 2
// cores after a barrier, from the last rank's start, 16 MiB 1.9-3.3 -> 1.5-2.0
// ms. The whole matrix is still checked before the rest is read. Such a piece is never in
// a compact step: it is larger than a line.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "backends/shm/cma.h"
#include "backends/shm/collectives.h"
#include "backends/shm/engine.h"
#include "backends/shm/huge_page_probe.h"
#include "backends/shm/large_copy.h"
#include "backends/shm/step_op.h"
#include "backends/shm/step_range.h"
#include "backends/shm/stream_copy.h"
#include "collie/errors.h"
#include "core/inline_or_heap.h"
#include "core/small_pool.h"

namespace collie::detail {
namespace {

// The compact step 0 in a step line's data field: [form][2N counts of `width`
// bytes: sends, then receives][the pieces for the other ranks, in rank order,
// packed], or with kUniform [form][one count of `width` bytes][the pieces].
// form 0: the step is in the slot.
static_assert(sizeof(size_t) == sizeof(uint64_t), "counts are 64-bit words in a slot");
class CompactStep {
 public:
  // Set in the first byte when the pieces are in the slot (only the counts in the line).
  static constexpr uint8_t kPiecesInSlot = 0x80;
  // Set in the first byte of a line whose 2N counts are all one count, written
  // once (with the pieces or, with kPiecesInSlot, without).
  static constexpr uint8_t kUniform = 0x40;

  // The counts' width in bytes in a line whose first byte is `form`.
  static uint8_t width_of(uint8_t form) { return form & ~(kPiecesInSlot | kUniform); }

  // The width counts up to `largest` need in a line of n ranks' counts, or 0
  // when they do not fit one.
  static uint8_t counts_width(size_t n, size_t largest) {
    const uint8_t width = largest <= 0xff ? 1 : largest <= 0xffff ? 2 : 0;
    if (width == 0 || pieces_at(n, width) > kInlineBytes) return 0;
    return width;
  }

  // The width of a compact step: the counts' (counts_width), when the pieces
  // for the other ranks (`piece_bytes` in all) fit the line after them; else 0.
  static uint8_t compact_width(size_t n, size_t largest, size_t piece_bytes) {
    const uint8_t width = counts_width(n, largest);
    if (width == 0 || pieces_at(n, width) + piece_bytes > kInlineBytes) return 0;
    return width;
  }

  // The form of a uniform line (kUniform and the width of `count`), when the
  // pieces for the other ranks (`piece_bytes` in all; 0 when they go to the
  // slot) fit the line after the count; else 0.
  static uint8_t uniform_form(size_t count, size_t piece_bytes) {
    const uint8_t width = count <= 0xff ? 1 : count <= 0xffff ? 2 : 0;
    if (width == 0 || 1 + width + piece_bytes > kInlineBytes) return 0;
    return kUniform | width;
  }

  // Whether a line (first byte nonzero) holds the pieces too.
  static bool holds_pieces(const uint8_t* line) { return (line[0] & kPiecesInSlot) == 0; }

  // form: the width, with kPiecesInSlot when the pieces go to the slot.
  static void write_counts(uint8_t* line, uint8_t form, CountSpan send, CountSpan recv) {
    const uint8_t width = width_of(form);
    line[0] = form;
    const size_t n = send.size();
    for (size_t j = 0; j < 2 * n; ++j)
      write_count(line + 1 + width * j, width, j < n ? send[j] : recv[j - n]);
  }

  // A uniform form (uniform_form) and its one count.
  static void write_uniform(uint8_t* line, uint8_t form, size_t count) {
    line[0] = form;
    write_count(line + 1, width_of(form), count);
  }

  // The one count of a uniform line.
  static size_t uniform_count(const uint8_t* line) {
    if (width_of(line[0]) == 1) return line[1];
    uint16_t c16;
    std::memcpy(&c16, line + 1, 2);
    return c16;
  }

  // Rank p's 2n counts from its line (form != 0) into `counts`.
  static void read_counts(const uint8_t* line, size_t n, size_t* counts) {
    if ((line[0] & kUniform) != 0) {
      std::fill(counts, counts + 2 * n, uniform_count(line));
      return;
    }
    if (width_of(line[0]) == 1) {
      for (size_t j = 0; j < 2 * n; ++j) counts[j] = line[1 + j];
      return;
    }
    for (size_t j = 0; j < 2 * n; ++j) {
      uint16_t c16;
      std::memcpy(&c16, line + 1 + 2 * j, 2);
      counts[j] = c16;
    }
  }

  // Where the pieces start in a line of `form` (or of counts `form` bytes wide).
  static size_t pieces_at(size_t n, uint8_t form) {
    return (form & kUniform) != 0 ? 1 + width_of(form) : 1 + 2 * n * width_of(form);
  }

 private:
  static void write_count(uint8_t* at, uint8_t width, size_t c) {
    if (width == 1) {
      *at = static_cast<uint8_t>(c);
    } else {
      const auto c16 = static_cast<uint16_t>(c);
      std::memcpy(at, &c16, 2);
    }
  }
};

// Words of an AllToAllOp's table for n ranks (AllToAllOp::table_).
constexpr size_t table_words(size_t n) { return 4 * n + 2 * n * n + n; }

class AllToAllOp final : public StepOp {
 public:
  AllToAllOp(const CollectiveCall& c, const AllToAllInput& in, CountSpan send_counts, void* out,
             CountSpan recv_counts, DType dtype, std::span<const ArenaRef> shared_input)
      : StepOp(*c.engine, *c.group, c.work, 1),
        engine_(*c.engine),
        shared_(!shared_input.empty()),
        in_ref_(in.is_packed() && shared_ ? shared_input[0] : ArenaRef{}),
        in_(static_cast<const uint8_t*>(in.packed)),
        out_(static_cast<uint8_t*>(out)),
        esize_(element_size(dtype)),
        header_bytes_(all_to_all_header_bytes(send_counts.size())),
        piece_bytes_(c.group->all_to_all_piece_bytes()),
        per_step_(piece_bytes_ >> std::countr_zero(esize_)),  // sizes are powers of two
        cma_(c.group->cma()),
        cma_pieces_(c.group->copy_rules().all_to_all_piece_cma),
        table_(table_words(send_counts.size())),
        send_(table_.data(), send_counts.size()),
        recv_(table_.data() + send_counts.size(), send_counts.size()) {
    // One pass: the table, the totals, the largest count and piece.
    const size_t n = send_counts.size(), self = me();
    size_t* displ = table_.data() + 2 * n;
    size_t sent = 0, received = 0, largest = 0, largest_for_peer = 0, for_peers = 0;
    size_t largest_from_peer = 0;
    bool uniform = true;  // every count, sent and expected, is send_counts[0]
    for (size_t i = 0; i < n; ++i) {
      table_[i] = send_counts[i];
      table_[n + i] = recv_counts[i];
      displ[i] = sent;
      displ[n + i] = received;
      sent += send_counts[i];
      received += recv_counts[i];
      largest = std::max({largest, send_counts[i], recv_counts[i]});
      uniform &= send_counts[i] == send_counts[0] && recv_counts[i] == send_counts[0];
      if (i != self) {
        largest_for_peer = std::max(largest_for_peer, send_counts[i]);
        largest_from_peer = std::max(largest_from_peer, recv_counts[i]);
        for_peers += send_counts[i];
      }
    }
    if (!in.is_packed()) {
      sources_.reserve(n);
      for (const void* piece : in.pieces) sources_.push_back(static_cast<const uint8_t*>(piece));
      if (shared_) piece_refs_.assign(shared_input.begin(), shared_input.end());
    }
    in_on_huge_pages_ = input_on_huge_pages(sent, largest_for_peer);
    // Ranks that passed shared tensors and ranks that did not must not mix.
    // So do ranks that disagree on reading pieces with CMA (they agree on one machine).
    if (shared_) {
      set_variant(2);
    } else if (cma_) {
      set_variant(3);
    }
    output_copy_ = gathered_output_copy(received * esize_);
    compact_form_ = uniform ? CompactStep::uniform_form(largest, for_peers * esize_) : 0;
    if (compact_form_ == 0)
      compact_form_ = CompactStep::compact_width(n, largest, for_peers * esize_);
    if (compact_form_ == 0) {
      // Counts in the line, pieces in the slot: only when no peer reads a piece
      // from this rank's input, which needs the slot's header (its address).
      bool any_pulled = false;
      for (size_t d = 0; d < n; ++d) {
        any_pulled |= d != self && pulled(send_[d], in_on_huge_pages_);
      }
      if (!any_pulled) {
        const uint8_t form =
            uniform ? CompactStep::uniform_form(largest, 0) : CompactStep::counts_width(n, largest);
        if (form != 0) counts_form_ = form | CompactStep::kPiecesInSlot;
      }
      // Counts in the line: what this rank reads first from a peer's slot is
      // the piece for it, at the same place in every peer's slot, of at most
      // the largest count it expects from a peer.
      if (counts_form_ != 0)
        prefetch_peers_data(header_bytes_ + self * piece_bytes_, largest_from_peer * esize_);
    }
    // Pieces that may be read from their senders' inputs are read as each
    // sender's step 0 shows (consume_arrived), and the own piece copied while
    // the others come.
    // A compact step (the whole call in the lines) copies the own piece while
    // the rank waits for its peers, with 2 ranks too, not after their flags
    // show: 2 ranks, 8 B after a barrier, alternating launches, 0.78-0.88 ->
    // 0.76-0.79 us; 32 B 0.77-0.82 -> 0.73-0.77. Not for pieces in the slots
    // (512 B and 2 KiB: no clear gain).
    if (pulled(largest_from_peer, true)) {
      consume_as_ranks_arrive(0);
    } else if (compact_form_ != 0) {
      consume_as_ranks_arrive(0, /*with_two=*/true);
    }
  }

 protected:
  void produce(size_t step, uint8_t* slot) override {
    const size_t n = send_.size();
    if (step == 0) {
      uint8_t* line = line_data(group().rank());
      if (compact_form_ != 0) return produce_compact(line);
      if ((counts_form_ & CompactStep::kUniform) != 0) {
        CompactStep::write_uniform(line, counts_form_, send_[0]);
      } else if (counts_form_ != 0) {
        CompactStep::write_counts(line, counts_form_, send_, recv_);
      } else {
        line[0] = 0;  // the step is in the slot
        auto* words = reinterpret_cast<uint64_t*>(slot);
        for (size_t j = 0; j < n; ++j) {
          words[j] = send_[j];
          words[n + j] = recv_[j];
        }
        write_where(words + 2 * n);
      }
    }
    for (size_t d = 0; d < n; ++d) {
      // Own piece: input -> output directly.
      if (d == me() || pulled(send_[d], in_on_huge_pages_)) continue;
      Range r = range_of(step, send_[d], per_step_);
      if (r.len > 0) {
        std::memcpy(piece(slot, d), source(d) + r.begin * esize_, r.len * esize_);
      }
    }
  }

  // Step 0 of rank p shows before every rank's has (consume_as_ranks_arrive):
  // this rank's own piece is copied when its own counts agree, and p's piece
  // for this rank is read when p's header says p sends what this rank expects
  // and that it is pulled. The whole matrix is checked in consume() as before;
  // a call it fails has read nothing out of bounds, only into its output.
  bool consume_arrived(size_t step, int rank, const uint8_t* slot) override {
    const size_t n = send_.size(), p = static_cast<size_t>(rank);
    if (step != 0) return false;
    if (p == me()) {
      if (send_[p] != recv_[p]) return false;
      copy_own_piece();
      return true;
    }
    if (line_data(rank)[0] != 0) return false;  // its step 0 is in its line: nothing pulled
    const uint64_t* header = reinterpret_cast<const uint64_t*>(slot);
    const bool huge = (header[2 * n + 1] & kInputOnHugePages) != 0;
    if (header[me()] != recv_[p] || !pulled(recv_[p], huge)) return false;
    pull_piece(p, header);
    return true;
  }

  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    const size_t n = send_.size();
    if (step == 0) {
      switch (step_zero_form(n)) {
        case StepZero::kAllCompact:
          return consume_compact_steps(n);
        case StepZero::kAllCountsInLines:
          plan_from_lines(n);
          break;
        case StepZero::kSomeInSlots:
          read_matrix(slots);
          check_all_to_all_counts(group(), work()->info(), matrix());
          plan();
          pull_pieces(slots);
          break;
      }
      copy_own_piece();
    }
    for (size_t p = 0; p < n; ++p) {
      if (p == me() || (pulls_ && pulled(recv_[p], on_huge_pages(p)))) continue;
      Range r = range_of(step, recv_[p], per_step_);
      if (r.len == 0) continue;
      const uint8_t* line = line_data(static_cast<int>(p));
      const uint8_t* from = step == 0 && line[0] != 0 && CompactStep::holds_pieces(line)
                                ? compact_piece(p)
                                : piece(slots[p], me());
      std::memcpy(out_ + (recv_displ(p) + r.begin) * esize_, from, r.len * esize_);
    }
  }

 private:
  static constexpr size_t kSharedPairMin = 8u << 10;

  size_t me() const { return static_cast<size_t>(group().rank()); }

  // Set in the header word that holds the arena chunk (bits 0-31) and whether
  // there is one (bit 32): the sender's input lies on huge pages.
  static constexpr uint64_t kInputOnHugePages = uint64_t{1} << 40;
  // Set there too when the sender's input is given piece by piece: the three
  // words that say where the piece for rank d lies follow at 3 * (1 + d).
  static constexpr uint64_t kPiecesApart = uint64_t{1} << 41;

  // Where the piece for rank d starts in this rank's input.
  const uint8_t* source(size_t d) const {
    return sources_.empty() ? in_ + send_displ(d) * esize_ : sources_[d];
  }

  // The header's words after the counts: where this rank's input lies (its
  // address for CMA, its place in the arena), and with kPiecesApart where each
  // piece does.
  void write_where(uint64_t* where) const {
    auto put = [](uint64_t* at, const void* address, ArenaRef ref, uint64_t flags) {
      at[0] = reinterpret_cast<uint64_t>(address);
      at[1] = ref.chunk | static_cast<uint64_t>(ref.present) << 32 | flags;
      at[2] = ref.offset;
    };
    const uint64_t huge = in_on_huge_pages_ ? kInputOnHugePages : 0;
    if (sources_.empty()) return put(where, in_, in_ref_, huge);
    put(where, nullptr, ArenaRef{}, huge | kPiecesApart);
    for (size_t d = 0; d < sources_.size(); ++d) {
      put(where + kAllToAllWhereWords * (1 + d), sources_[d], shared_ ? piece_refs_[d] : ArenaRef{},
          0);
    }
  }

  // Does the piece of `count` elements between two different ranks skip the
  // slots? `sender_on_huge_pages`: the sender's input lies on huge pages.
  bool pulled(size_t count, bool sender_on_huge_pages) const {
    const size_t bytes = count * esize_;
    if (shared_) return bytes >= kSharedPairMin;
    return bytes >= cma_pieces_.from && (bytes < cma_pieces_.below || sender_on_huge_pages);
  }

  // Whether this rank's input lies on huge pages, asked of the kernel only when
  // the answer can matter: a piece for a peer of kCmaPairMax (the table's limit)
  // or more read with CMA.
  // `sent`: every element of the input; `largest_for_peer`: its largest piece for another rank.
  // Given piece by piece, the input is on huge pages when every such piece is.
  bool input_on_huge_pages(size_t sent, size_t largest_for_peer) const {
    if (shared_ || cma_pieces_.empty() || cma_pieces_.below == SizeRange::kUnbounded) return false;
    if (largest_for_peer * esize_ < cma_pieces_.below) return false;
    if (sources_.empty()) return lies_on_huge_pages(in_, sent * esize_);
    for (size_t d = 0; d < sources_.size(); ++d) {
      const size_t bytes = send_[d] * esize_;
      if (d != me() && bytes >= cma_pieces_.below && !lies_on_huge_pages(sources_[d], bytes))
        return false;
    }
    return true;
  }

  uint8_t* piece(uint8_t* slot, size_t d) const { return slot + header_bytes_ + d * piece_bytes_; }
  const uint8_t* piece(const uint8_t* slot, size_t d) const {
    return slot + header_bytes_ + d * piece_bytes_;
  }

  void produce_compact(uint8_t* line) const {
    const size_t n = send_.size();
    if ((compact_form_ & CompactStep::kUniform) != 0) {
      CompactStep::write_uniform(line, compact_form_, send_[0]);
    } else {
      CompactStep::write_counts(line, compact_form_, send_, recv_);
    }
    uint8_t* at = line + CompactStep::pieces_at(n, compact_form_);
    for (size_t d = 0; d < n; ++d) {
      if (d == me() || send_[d] == 0) continue;
      std::memcpy(at, source(d), send_[d] * esize_);
      at += send_[d] * esize_;
    }
  }

  // The piece compact rank p sends to this one (the matrix is read and checked).
  const uint8_t* compact_piece(size_t p) const {
    const size_t n = send_.size();
    const uint8_t* line = line_data(static_cast<int>(p));
    const size_t* sends = matrix() + p * 2 * n;
    size_t at = CompactStep::pieces_at(n, line[0]);
    for (size_t d = 0; d < me(); ++d) {
      if (d != p) at += sends[d] * esize_;
    }
    return line + at;
  }

  // In step 0, once the counts are checked (both paths), unless it was copied
  // as this rank came (consume_arrived): the own piece goes from input to
  // output at once, never through a slot.
  void copy_own_piece() {
    if (consumed_early(me())) return;
    copy_out(out_ + recv_displ(me()) * esize_, source(me()), recv_[me()] * esize_);
  }

  // How the ranks wrote their step 0, each by its own counts (CompactStep): all
  // compact, pieces included; all with their counts in their lines; or some in
  // their slots, with the header.
  enum class StepZero { kAllCompact, kAllCountsInLines, kSomeInSlots };
  StepZero step_zero_form(size_t n) const {
    bool all_compact = true;
    for (size_t p = 0; p < n; ++p) {
      const uint8_t* line = line_data(static_cast<int>(p));
      if (line[0] == 0) return StepZero::kSomeInSlots;
      all_compact &= CompactStep::holds_pieces(line);
    }
    return all_compact ? StepZero::kAllCompact : StepZero::kAllCountsInLines;
  }

  // Step 0 when every rank's counts are in its line (small pieces, the usual
  // case from 41 bytes to a few KiB): no piece is pulled, since a rank writes its
  // counts there only when no peer reads from its input, so there is no header
  // to read, no input to pull from, and the plan is the largest piece between
  // two ranks (2 ranks, 256-byte pieces: 3,096 -> 3,008 instructions a call).
  void plan_from_lines(size_t n) {
    pulls_ = false;
    if (all_uniform_alike(n)) {  // every piece between two ranks is send_[0]
      nsteps_ = std::max<size_t>(1, steps_for(n > 1 ? send_[0] : 0, per_step_));
      return;
    }
    size_t* m = table_.data() + 4 * n;
    size_t* huge = m + 2 * n * n;
    size_t largest = 0;
    for (size_t p = 0; p < n; ++p) {
      size_t* sends = m + p * 2 * n;
      CompactStep::read_counts(line_data(static_cast<int>(p)), n, sends);
      huge[p] = 0;
      for (size_t j = 0; j < n; ++j) {
        if (j != p) largest = std::max(largest, sends[j]);
      }
    }
    check_all_to_all_counts(group(), work()->info(), matrix());
    nsteps_ = std::max<size_t>(1, steps_for(largest, per_step_));
  }

  // Step 0 when every rank's is compact: the whole call (a small all_to_all's
  // usual case). No piece is pulled (a pulled piece is larger than a line) and
  // each fits one step, so there is no plan to make, no pull and no huge-page
  // flag to read: 2 ranks, 8 B, 150 fewer instructions than the general path.
  void consume_compact_steps(size_t n) {
    if (all_uniform_alike(n)) return consume_uniform_steps(n);
    size_t* m = table_.data() + 4 * n;
    for (size_t p = 0; p < n; ++p) {
      CompactStep::read_counts(line_data(static_cast<int>(p)), n, m + p * 2 * n);
    }
    check_all_to_all_counts(group(), work()->info(), matrix());
    nsteps_ = 1;
    copy_own_piece();
    for (size_t p = 0; p < n; ++p) {
      if (p == me() || recv_[p] == 0) continue;
      std::memcpy(out_ + recv_displ(p) * esize_, compact_piece(p), recv_[p] * esize_);
    }
  }

  // Whether this rank's step 0 is uniform and every peer's line says the same
  // form and count: then what each rank sends each other rank is what that one
  // expects, and the matrix need not be read.
  bool all_uniform_alike(size_t n) const {
    const uint8_t form = compact_form_ != 0 ? compact_form_ : counts_form_;
    if ((form & CompactStep::kUniform) == 0) return false;
    for (size_t p = 0; p < n; ++p) {
      const uint8_t* line = line_data(static_cast<int>(p));
      if (p != me() && (line[0] != form || CompactStep::uniform_count(line) != send_[0]))
        return false;
    }
    return true;
  }

  // consume_compact_steps when all_uniform_alike: rank p's piece for this rank
  // is the one after those for the ranks before this one, p excepted.
  void consume_uniform_steps(size_t n) {
    nsteps_ = 1;
    copy_own_piece();
    const size_t piece = send_[0] * esize_;
    if (piece == 0) return;
    const size_t at = CompactStep::pieces_at(n, compact_form_);
    for (size_t p = 0; p < n; ++p) {
      if (p == me()) continue;
      const size_t before = me() - (p < me() ? 1 : 0);
      std::memcpy(out_ + recv_displ(p) * esize_,
                  line_data(static_cast<int>(p)) + at + before * piece, piece);
    }
  }

  // Every rank's 2n counts into the matrix, from its line or its slot.
  void read_matrix(const std::vector<const uint8_t*>& slots) {
    const size_t n = slots.size();
    size_t* m = table_.data() + 4 * n;
    size_t* huge = m + 2 * n * n;
    for (size_t p = 0; p < n; ++p) {
      const uint8_t* line = line_data(static_cast<int>(p));
      if (line[0] != 0) {
        CompactStep::read_counts(line, n, m + p * 2 * n);
        huge[p] = 0;  // no header: no piece read from its input
      } else {
        std::memcpy(m + p * 2 * n, slots[p], 2 * n * sizeof(uint64_t));
        huge[p] = (reinterpret_cast<const uint64_t*>(slots[p])[2 * n + 1] & kInputOnHugePages) != 0;
      }
    }
  }
  const size_t* matrix() const { return table_.data() + 4 * send_.size(); }
  // Whether rank p's input lies on huge pages, as its step 0 said.
  bool on_huge_pages(size_t p) const { return matrix()[2 * send_.size() * send_.size() + p] != 0; }

  // How many steps the staged pieces need. The same on every rank: it reads only
  // the (now agreed) matrix.
  void plan() {
    const size_t n = send_.size();
    size_t staged_max = 0;
    bool any_pulled = false;
    for (size_t i = 0; i < n; ++i) {
      const size_t* sends = matrix() + i * 2 * n;
      const bool huge = on_huge_pages(i);
      for (size_t j = 0; j < n; ++j) {
        if (i == j) continue;  // own pieces: copied in step 0
        if (pulled(sends[j], huge)) {
          any_pulled = true;
        } else {
          staged_max = std::max(staged_max, sends[j]);
        }
      }
    }
    nsteps_ = std::max<size_t>(any_pulled ? 2 : 1, steps_for(staged_max, per_step_));
    if (!any_pulled || !group().counts_transfers()) return;
    // Each peer that pulls a piece of this rank's input says so when it has
    // (transfers_done, layout.h): the count only ever grows, by every such
    // call's readers.
    const size_t* mine = matrix() + me() * 2 * n;
    for (size_t q = 0; q < n; ++q) {
      group().transfers_done_target += q != me() && pulled(mine[q], on_huge_pages(me())) ? 1 : 0;
    }
    read_target_ = group().transfers_done_target;
    // Step 1 only makes sure the pulled pieces were read. Where it carries no
    // staged data, this rank waits in it for the readers of its own pieces,
    // not for every rank to have read everything.
    if (nsteps_ == 2 && steps_for(staged_max, per_step_) <= 1) {
      wait_at_step_only_until_done_with_me(1);
    }
  }

  bool done_with_me() const override {
    return group().control(group().rank()).transfers_done.load(std::memory_order_acquire) >=
           read_target_;
  }

  // Copies a whole piece into this rank's output, past the cache when the
  // output is far larger than it (gathered_output_copy).
  void copy_out(uint8_t* dst, const uint8_t* src, size_t bytes) const {
    if (bytes != 0) copy_output(dst, src, bytes, output_copy_);
  }

  // Reads the pulled pieces addressed to this rank from their senders' inputs
  // (whose steps are in their slots: a pulled piece does not fit a line),
  // those not read as their senders came.
  void pull_pieces(const std::vector<const uint8_t*>& slots) {
    const size_t n = slots.size();
    // Senders in turn from the next rank on, as DirectAllGather reads them: were
    // every rank to read rank 0 first, they would queue on its page-table lock
    // (direct_ops.h, "one process's pages").
    for (size_t i = 1; i < n; ++i) {
      const size_t p = (me() + i) % n;
      if (!pulled(recv_[p], on_huge_pages(p))) continue;
      if (consumed_early(p)) continue;
      pull_piece(p, reinterpret_cast<const uint64_t*>(slots[p]));
    }
  }

  // Reads rank p's piece for this one from p's input, as p's step 0 `header`
  // (its slot: its 2n counts, then where its input lies) says.
  void pull_piece(size_t p, const uint64_t* header) {
    const size_t n = send_.size();
    const uint64_t* sends = header;
    const uint64_t* where = header + 2 * n;
    // Elements before this rank's piece in where p's input lies; all of it.
    uint64_t from = 0, sent = 0;
    if ((where[1] & kPiecesApart) != 0) {
      where += kAllToAllWhereWords * (1 + me());  // this rank's piece, on its own
      sent = recv_[p];
    } else {
      for (size_t j = 0; j < n; ++j) {
        if (j < me()) from += sends[j];
        sent += sends[j];
      }
    }
    uint8_t* dst = out_ + recv_displ(p) * esize_;
    const int owner = group().world_rank(static_cast<int>(p));
    if (shared_) {
      const ArenaRef ref{static_cast<uint32_t>(where[1]), static_cast<uint32_t>(where[1] >> 32) & 1,
                         where[2]};
      if (!ref.present) {
        throw CommError(work()->info().describe() + ": rank " + std::to_string(owner) +
                        " has no input in the shared arena");
      }
      const uint8_t* src = engine_.peer_arenas().resolve(owner, ref, sent * esize_);
      copy_out(dst, src + from * esize_, recv_[p] * esize_);
    } else {
      cma_read(group().pid(static_cast<int>(p)), dst, where[0] + from * esize_, recv_[p] * esize_,
               owner);
    }
    // p may return once every reader of its pieces has said so (plan()).
    if (group().counts_transfers()) {
      group().control(static_cast<int>(p)).transfers_done.fetch_add(1, std::memory_order_release);
    }
  }

  ShmEngine& engine_;
  bool shared_;
  ArenaRef in_ref_;
  OutputCopy output_copy_ = OutputCopy::kCached;
  uint8_t compact_form_ = 0;  // this rank's step 0 is compact (CompactStep) if nonzero: its form
  uint8_t counts_form_ = 0;   // else its step 0's counts are in its line if nonzero: their form
  const uint8_t* in_;         // a packed input (nullptr when given piece by piece)
  uint8_t* out_;
  // An input given piece by piece: where each piece lies, and with shared_ where
  // in the arena (both empty for a packed input).
  std::vector<const uint8_t*, PoolAllocator<const uint8_t*>> sources_;
  std::vector<ArenaRef, PoolAllocator<ArenaRef>> piece_refs_;
  size_t esize_, header_bytes_, piece_bytes_, per_step_;
  bool cma_;
  SizeRange cma_pieces_;           // pieces in it are read with CMA (copy_rules.h),
  bool in_on_huge_pages_ = false;  // and larger ones from inputs on huge pages
  bool pulls_ = true;  // false once step 0 showed that no piece is pulled (plan_from_lines)
  // What this rank's transfers_done must reach before step 1 ends (plan()).
  uint64_t read_target_ = 0;
  // This rank's n send and n receive counts, where each piece starts (n in the
  // input, then n in the output), then the count matrix as read in step 0 (2n
  // per rank: matrix()) and, per rank, whether its input lies on huge pages.
  // Inside the op up to 4 ranks (52 words: the op stays within a 1 KiB block of
  // the pool); a pool block beyond.
  InlineOrHeap<size_t, table_words(4), PoolAllocator<size_t>> table_;
  CountSpan send_, recv_;  // the first 2n words of table_

  size_t send_displ(size_t rank) const { return table_[2 * send_.size() + rank]; }
  size_t recv_displ(size_t rank) const { return table_[3 * send_.size() + rank]; }
};

}  // namespace

void check_all_to_all_counts(const ShmGroup& g, const OpInfo& info, const size_t* matrix) {
  const size_t n = static_cast<size_t>(g.size());
  // Row i: [what i sends to 0..n-1, what i expects from 0..n-1].
  auto agree = [&](size_t i, size_t j) {
    return matrix[i * 2 * n + j] == matrix[j * 2 * n + n + i];
  };
  bool all_agree = true;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) all_agree &= agree(i, j);
  }
  if (all_agree) return;
  std::string mismatches;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (agree(i, j) || mismatches.size() >= 400) continue;
      mismatches += " rank " + std::to_string(g.world_rank(static_cast<int>(i))) + " sends " +
                    std::to_string(matrix[i * 2 * n + j]) + " elements to rank " +
                    std::to_string(g.world_rank(static_cast<int>(j))) + ", which expects " +
                    std::to_string(matrix[j * 2 * n + n + i]) + ";";
    }
  }
  throw CommError(info.describe() + ": send and receive sizes disagree:" + mismatches);
}

std::unique_ptr<OpState> make_all_to_all(CollectiveCall c, const AllToAllInput& in,
                                         CountSpan send_counts, void* out, CountSpan recv_counts,
                                         DType dtype, std::span<const ArenaRef> shared_input) {
  return std::make_unique<AllToAllOp>(c, in, send_counts, out, recv_counts, dtype, shared_input);
}

}  // namespace collie::detail
