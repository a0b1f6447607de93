#include "backends/shm/collectives.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "backends/shm/cma.h"
#include "backends/shm/engine.h"
#include "backends/shm/step_op.h"
#include "backends/shm/stream_copy.h"
#include "collie/errors.h"
#include "core/reduce_kernels.h"

namespace collie::detail {
namespace {

// Every call makes its op here: a 64-bit division costs tens of cycles, so the
// common cases take none (one step; element sizes are powers of two).
size_t steps_for(size_t count, size_t per_step) {
  if (count <= per_step) return 1;
  return (count + per_step - 1) / per_step;
}

// Elements of one rank's contribution that fit in a slot (element sizes are
// powers of two: dtype.h, tested in core_test_dtype).
size_t chunk_elems(const ShmGroup& g, DType dtype) {
  return g.slot_bytes() >> std::countr_zero(element_size(dtype));
}

// Elements of `dtype` in one per-destination piece of a slot (ShmGroup::piece_bytes).
size_t piece_elems(const ShmGroup& g, DType dtype) {
  return g.piece_bytes() >> std::countr_zero(element_size(dtype));
}

// The [begin, begin+len) range of step `step` over `count` elements, `per_step` at a time.
struct Range {
  size_t begin, len;
};
Range range_of(size_t step, size_t count, size_t per_step) {
  size_t begin = std::min(count, step * per_step);
  return {begin, std::min(per_step, count - begin)};
}

// A rank's own contribution goes to its slot for its peers and to its own
// output (broadcast's root, all_gather). For calls of more than this many bytes
// per rank both are written in one pass over the input (copy_to_slot_and_output);
// smaller ones copy it out of the slot with the peers' (fewer instructions).
constexpr size_t kFusedCopyBytes = 16u << 10;

// Copies `bytes` from `from` into both `slot` and `out`, kFusedCopyBytes at a
// time, so that each block is read once and written twice while it is in L1.
// Streaming stores for `out` when it is large (kStreamingOutputBytes).
void copy_to_slot_and_output(uint8_t* slot, uint8_t* out, const uint8_t* from, size_t bytes,
                             bool stream_out) {
  constexpr size_t kBlockBytes = kFusedCopyBytes;
  for (size_t at = 0; at < bytes; at += kBlockBytes) {
    const size_t n = std::min(kBlockBytes, bytes - at);
    std::memcpy(slot + at, from + at, n);
    if (stream_out) {
      stream_copy(out + at, from + at, n);
    } else {
      std::memcpy(out + at, from + at, n);
    }
  }
}

// Every rank contributes the same-sized chunk per step (all_reduce, reduce,
// broadcast, all_gather, gather); subclasses say what to do with the N chunks.
class ChunkedOp : public StepOp {
 public:
  // `per_step`: elements per step, a slot's worth unless given (0).
  ChunkedOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
            bool contributes, size_t per_step = 0)
      : StepOp(*c.engine, *c.group, c.work,
               steps_for(count, per_step ? per_step : chunk_elems(*c.group, dtype))),
        in_(static_cast<const uint8_t*>(in)),
        out_(static_cast<uint8_t*>(out)),
        count_(count),
        dtype_(dtype),
        esize_(element_size(dtype)),
        per_step_(per_step ? per_step : chunk_elems(*c.group, dtype)),
        contributes_(contributes) {
    // One step of at most kSmallSlotBytes: its chunk is at the slot's start anyway.
    if (count <= per_step_) place_small(count * esize_);
  }

 protected:
  void produce(size_t step, uint8_t* slot) override {
    Range r = range_of(step, count_, per_step_);
    if (contributes_ && r.len > 0) std::memcpy(slot, in_ + r.begin * esize_, r.len * esize_);
  }

  const uint8_t* in_;
  uint8_t* out_;
  size_t count_;
  DType dtype_;
  size_t esize_;
  size_t per_step_;
  bool contributes_;
};

class AllReduceOp final : public ChunkedOp {
 public:
  AllReduceOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
              ReduceOp op, bool has_output)
      : ChunkedOp(c, in, out, count, dtype, true), op_(op), has_output_(has_output) {}

 protected:
  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    Range r = range_of(step, count_, per_step_);
    if (!has_output_ || r.len == 0) return;
    reduce_n(out_ + r.begin * esize_, reinterpret_cast<const void* const*>(slots.data()),
             static_cast<int>(slots.size()), r.len, dtype_, op_);
  }

 private:
  ReduceOp op_;
  bool has_output_;
};

// reduce: the non-roots copy their chunks in and the root reduces them, its own
// contribution read straight from its input (nobody else reads it). The two
// halves run on different ranks, so smaller steps overlap them: the root reduces
// chunk j while the others copy chunk j+1. A 128 KiB reduce in one step was a
// copy then a reduction (0.7x OpenMPI's time); about 8 steps hide most of the copy.
class ReduceToRootOp final : public ChunkedOp {
 public:
  ReduceToRootOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
                 ReduceOp op, int root)
      : ChunkedOp(c, in, out, count, dtype, c.group->rank() != root,
                  pipelined_elems(*c.group, count, dtype)),
        op_(op),
        root_(root) {
    // Only calls the two forms split differently (more than one 8 KiB step).
    if (c.group->config().oversubscribed && count * esize_ > (8u << 10)) set_variant(5);
  }

 protected:
  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    Range r = range_of(step, count_, per_step_);
    if (group().rank() != root_ || r.len == 0) return;
    std::vector<const uint8_t*>& sources = group().step_sources;
    for (size_t p = 0; p < slots.size(); ++p) sources[p] = slots[p];
    sources[static_cast<size_t>(root_)] = in_ + r.begin * esize_;
    reduce_n(out_ + r.begin * esize_, reinterpret_cast<const void* const*>(sources.data()),
             static_cast<int>(sources.size()), r.len, dtype_, op_);
  }

 private:
  // Step sizes measured on the 2-core machines (2 ranks, against OpenMPI): up to
  // 128 KiB sixteenth parts of at least 8 KiB (the copy hides behind the
  // reduction; one step was 0.7x at 128 KiB, 16 steps 1.3x); up to 512 KiB halves;
  // beyond, quarters of at least 256 KiB — smaller steps there lose more to
  // cache-line traffic between the cores than they gain in overlap (2 MiB in
  // 128 KiB steps took twice as long as in 512 KiB ones). With more ranks than
  // CPUs nothing overlaps and every step waits for every rank to be scheduled,
  // so a slot's worth at a time (4 ranks on 2 cores: 64 KiB 31 -> 17 us, 128 KiB
  // 59 -> 27, 512 KiB 120 -> 78). Depends only on what the fingerprint checks
  // (the oversubscribed form is marked in it), so every rank splits alike.
  static size_t pipelined_elems(const ShmGroup& g, size_t count, DType dtype) {
    const size_t esize = element_size(dtype);
    const size_t bytes = count * esize;
    if (g.config().oversubscribed) return 0;  // a slot's worth (ChunkedOp)
    size_t step = bytes <= (128u << 10)   ? std::max<size_t>(8u << 10, bytes / 16)
                  : bytes <= (512u << 10) ? bytes / 2
                                          : std::max<size_t>(256u << 10, bytes / 4);
    step = std::min(step / 64 * 64, g.slot_bytes());
    return std::max<size_t>(1, step / esize);
  }

  ReduceOp op_;
  int root_;
};

// all_reduce for large tensors: reduce-scatter then all-gather, per chunk, in two
// steps. Step 2j: every rank copies chunk j in, but for its own slice; each
// reduces its 1/N slice of the chunk over the N-1 peers' slots and its own input
// into its next slot, copying each reduced block into its output at once. Step
// 2j+1: every rank copies the peers' reduced slices into its output. Each rank
// reads 2 chunks and adds 1/N of the chunk (the one-shot form reads N chunks and
// adds all of it), which is what matters with many ranks or few cores. Slices
// are reduced in rank order too, so results stay bitwise identical on every rank.
class TwoShotAllReduceOp final : public StepOp {
 public:
  TwoShotAllReduceOp(const CollectiveCall& c, const void* in, void* out, size_t count,
                     DType dtype, ReduceOp op)
      : StepOp(*c.engine, *c.group, c.work,
               2 * steps_for(count, slice_elems(*c.group, dtype) * c.group->size())),
        in_(static_cast<const uint8_t*>(in)),
        out_(static_cast<uint8_t*>(out)),
        count_(count),
        dtype_(dtype),
        esize_(element_size(dtype)),
        slice_(slice_elems(*c.group, dtype)),
        n_(static_cast<size_t>(c.group->size())),
        op_(op),
        sources_(n_) {
    set_variant(1);
  }

  // Elements of one rank's slice of a whole chunk: N slices fill a slot, each
  // 64-byte aligned.
  static size_t slice_elems(const ShmGroup& g, DType dtype) { return piece_elems(g, dtype); }

 protected:
  void produce(size_t step, uint8_t* slot) override {
    if (step % 2 != 0) return;  // the reduced slice is already in place
    // The peers' slices only: this rank reduces its own slice straight from its
    // input, and nobody else reads it (a sixth less memory traffic at 2 ranks).
    Range chunk = range_of(step / 2, count_, slice_ * n_);
    Range mine = range_of(static_cast<size_t>(group().rank()), chunk.len, slice_in(chunk));
    const uint8_t* from = in_ + chunk.begin * esize_;
    if (mine.begin > 0) std::memcpy(slot, from, mine.begin * esize_);
    const size_t after = mine.begin + mine.len;
    if (after < chunk.len) {
      std::memcpy(slot + after * esize_, from + after * esize_, (chunk.len - after) * esize_);
    }
  }

  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    Range chunk = range_of(step / 2, count_, slice_ * n_);
    const size_t me = static_cast<size_t>(group().rank());
    if (step % 2 == 0) {
      Range mine = range_of(me, chunk.len, slice_in(chunk));
      if (mine.len == 0) return;
      // A block at a time, so that the reduced block is copied into this rank's
      // own output while it is still in L1 (the next step copies only the
      // peers' slices out).
      const bool stream = count_ * esize_ >= kStreamingOutputBytes;
      const size_t block = kFusedBlockBytes / esize_;
      for (size_t at = 0; at < mine.len; at += block) {
        const size_t len = std::min(block, mine.len - at);
        const size_t off = (mine.begin + at) * esize_;
        for (size_t p = 0; p < n_; ++p) sources_[p] = slots[p] + off;
        sources_[me] = in_ + chunk.begin * esize_ + off;
        uint8_t* reduced = my_next_slot() + off;
        reduce_n(reduced, reinterpret_cast<const void* const*>(sources_.data()),
                 static_cast<int>(n_), len, dtype_, op_);
        uint8_t* dst = out_ + chunk.begin * esize_ + off;
        if (stream) {
          stream_copy(dst, reduced, len * esize_);
        } else {
          std::memcpy(dst, reduced, len * esize_);
        }
      }
      return;
    }
    const bool stream = count_ * esize_ >= kStreamingOutputBytes;
    for (size_t p = 0; p < n_; ++p) {
      Range theirs = range_of(p, chunk.len, slice_in(chunk));
      if (theirs.len == 0 || p == me) continue;
      uint8_t* dst = out_ + (chunk.begin + theirs.begin) * esize_;
      const uint8_t* src = slots[p] + theirs.begin * esize_;
      if (stream) {
        stream_copy(dst, src, theirs.len * esize_);
      } else {
        std::memcpy(dst, src, theirs.len * esize_);
      }
    }
  }

 private:
  // Elements of one rank's slice of `chunk`: a shorter chunk (the last, or the
  // only one of a tensor smaller than a slot) is split evenly too, in 64-byte
  // multiples. Cut in slot-sized slices, a 512 KiB tensor was all rank 0's to
  // reduce at 2 ranks while rank 1 waited.
  size_t slice_in(Range chunk) const {
    const size_t align = std::max<size_t>(1, 64 / esize_);
    const size_t even = ((chunk.len + n_ - 1) / n_ + align - 1) / align * align;
    return std::min(slice_, even);
  }

  static constexpr size_t kFusedBlockBytes = 16u << 10;

  const uint8_t* in_;
  uint8_t* out_;
  size_t count_;
  DType dtype_;
  size_t esize_;
  size_t slice_;
  size_t n_;
  ReduceOp op_;
  std::vector<const uint8_t*> sources_;
};

// Which all_reduce: one-shot reads N chunks per rank and adds all of them;
// two-shot reads 2 and adds 1/N, for one extra step per chunk. Measured on the
// 2-core machines (docs/performance.md): at 2 ranks two-shot wins from 128 KiB
// (2 MiB: 220 vs 330 us) at every size since it reads its own slice in place
// (medians of six alternations: 16 MiB 3.6 -> 3.0 ms, 64 MiB 13.2 -> 12.0 ms;
// before, one-shot was ahead by 10 % at 32 MiB); from 3 ranks two-shot wins from
// about 256 KiB at every size. Those are the AMD machine's thresholds. Where
// the group prefers single copies (copy_path.h: the Intel machine, on which
// handing freshly written data between cores is what limits staged steps),
// two-shot wins much earlier: from 8 KiB at 2 ranks (64 KiB: 6.5 against
// 17.5 us; 4 KiB: 2.1 against 1.7) and from 16 KiB with 4 ranks on 2 cores
// (64 KiB: 15 against 28 us; 1 MiB: 293 against 532).
// COLLIE_ALLREDUCE_ALGO=oneshot|twoshot forces one (it must match on every rank;
// the variant is in the fingerprint, so a mismatch fails loudly).
enum class AllReduceAlgo { kAuto, kOneShot, kTwoShot };

// COLLIE_ALLREDUCE_ALGO, read once (every all_reduce asks).
AllReduceAlgo forced_all_reduce_algo() {
  static const AllReduceAlgo forced = [] {
    const char* v = std::getenv("COLLIE_ALLREDUCE_ALGO");
    const std::string name = v != nullptr ? v : "";
    if (name == "oneshot") return AllReduceAlgo::kOneShot;
    if (name == "twoshot") return AllReduceAlgo::kTwoShot;
    return AllReduceAlgo::kAuto;
  }();
  return forced;
}

bool use_two_shot(const ShmGroup& g, size_t bytes) {
  const AllReduceAlgo forced = forced_all_reduce_algo();
  if (g.size() <= 1 || forced == AllReduceAlgo::kOneShot) return false;
  if (forced == AllReduceAlgo::kTwoShot) return true;
  if (g.prefers_single_copy()) return bytes >= (g.size() == 2 ? (8u << 10) : (16u << 10));
  return bytes >= (g.size() == 2 ? (128u << 10) : (256u << 10));
}

// The root copies each chunk into its slot and, in the same pass, into its own
// output; the others copy it out of the root's slot. Outputs of
// kStreamingOutputBytes or more take streaming stores.
class BroadcastOp final : public ChunkedOp {
 public:
  BroadcastOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
              int root)
      : ChunkedOp(c, in, out, count, dtype, c.group->rank() == root),
        root_(root),
        fused_(count * esize_ > kFusedCopyBytes),
        stream_(fused_ && count * esize_ >= kStreamingOutputBytes) {}

 protected:
  void produce(size_t step, uint8_t* slot) override {
    if (!fused_) return ChunkedOp::produce(step, slot);
    if (!contributes_) return;
    Range r = range_of(step, count_, per_step_);
    copy_to_slot_and_output(slot, out_ + r.begin * esize_, in_ + r.begin * esize_, r.len * esize_,
                            stream_);
  }

  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    if (fused_ && contributes_) return;  // the root wrote its output in produce()
    Range r = range_of(step, count_, per_step_);
    if (r.len == 0) return;
    uint8_t* dst = out_ + r.begin * esize_;
    if (stream_) {
      stream_copy(dst, slots[static_cast<size_t>(root_)], r.len * esize_);
    } else {
      std::memcpy(dst, slots[static_cast<size_t>(root_)], r.len * esize_);
    }
  }

 private:
  int root_;
  bool fused_;
  bool stream_;
};

// all_gather, and gather (only the root has an output). A rank with an output
// writes its own chunk there in the same pass as into its slot, and copies only
// the peers' chunks out of their slots.
class AllGatherOp final : public ChunkedOp {
 public:
  AllGatherOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
              bool has_output)
      : ChunkedOp(c, in, out, count, dtype, true),
        has_output_(has_output),
        fused_(has_output && count * esize_ > kFusedCopyBytes),
        stream_(fused_ &&
                count * esize_ * static_cast<size_t>(c.group->size()) >= kStreamingOutputBytes) {}

 protected:
  void produce(size_t step, uint8_t* slot) override {
    if (!fused_) return ChunkedOp::produce(step, slot);
    Range r = range_of(step, count_, per_step_);
    const size_t me = static_cast<size_t>(group().rank());
    copy_to_slot_and_output(slot, out_ + (me * count_ + r.begin) * esize_, in_ + r.begin * esize_,
                            r.len * esize_, stream_);
  }

  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    Range r = range_of(step, count_, per_step_);
    if (!has_output_ || r.len == 0) return;
    if (!fused_) {  // small: every chunk, this rank's too, from the slots
      for (size_t p = 0; p < slots.size(); ++p) {
        std::memcpy(out_ + (p * count_ + r.begin) * esize_, slots[p], r.len * esize_);
      }
      return;
    }
    const size_t me = static_cast<size_t>(group().rank());
    for (size_t p = 0; p < slots.size(); ++p) {
      if (p == me) continue;  // written in produce()
      uint8_t* dst = out_ + (p * count_ + r.begin) * esize_;
      if (stream_) {
        stream_copy(dst, slots[p], r.len * esize_);
      } else {
        std::memcpy(dst, slots[p], r.len * esize_);
      }
    }
  }

 private:
  bool has_output_;
  bool fused_;
  bool stream_;
};

// Each rank sends a different piece to every destination (reduce_scatter, scatter).
class PiecewiseOp : public StepOp {
 public:
  PiecewiseOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
              bool contributes)
      : StepOp(*c.engine, *c.group, c.work, steps_for(count, piece_elems(*c.group, dtype))),
        in_(static_cast<const uint8_t*>(in)),
        out_(static_cast<uint8_t*>(out)),
        count_(count),
        dtype_(dtype),
        esize_(element_size(dtype)),
        piece_bytes_(c.group->piece_bytes()),
        per_step_(piece_elems(*c.group, dtype)),
        contributes_(contributes),
        npieces_(static_cast<size_t>(c.group->size())) {
    // All N pieces fit in the step line (one cache line per peer to read, with
    // the flag and fingerprint) or a small slot: packed there instead.
    if (count <= per_step_ && place_small(count * esize_ * npieces_)) {
      piece_bytes_ = count * esize_;
    }
  }

 protected:
  // This rank's own piece never goes through its slot: consume() takes it from
  // the input (one copy, or none, instead of two).
  void produce(size_t step, uint8_t* slot) override {
    Range r = range_of(step, count_, per_step_);
    if (!contributes_ || r.len == 0) return;
    const size_t me = static_cast<size_t>(group().rank());
    for (size_t d = 0; d < npieces_; ++d) {
      if (d == me) continue;
      std::memcpy(slot + d * piece_bytes_, in_ + (d * count_ + r.begin) * esize_, r.len * esize_);
    }
  }

  // Where piece `me` of step range r comes from in rank p's contribution.
  const uint8_t* piece_of(size_t p, const uint8_t* slot, size_t me, Range r) const {
    if (p == static_cast<size_t>(group().rank())) return in_ + (me * count_ + r.begin) * esize_;
    return slot + me * piece_bytes_;
  }

  const uint8_t* in_;
  uint8_t* out_;
  size_t count_;
  DType dtype_;
  size_t esize_;
  size_t piece_bytes_;
  size_t per_step_;
  bool contributes_;
  size_t npieces_;  // the group's size
};

class ReduceScatterOp final : public PiecewiseOp {
 public:
  ReduceScatterOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
                  ReduceOp op)
      : PiecewiseOp(c, in, out, count, dtype, true), op_(op) {}

 protected:
  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    Range r = range_of(step, count_, per_step_);
    if (r.len == 0) return;
    size_t me = static_cast<size_t>(group().rank());
    std::vector<const uint8_t*>& pieces = group().step_sources;
    for (size_t p = 0; p < slots.size(); ++p) pieces[p] = piece_of(p, slots[p], me, r);
    reduce_n(out_ + r.begin * esize_, reinterpret_cast<const void* const*>(pieces.data()),
             static_cast<int>(pieces.size()), r.len, dtype_, op_);
  }

 private:
  ReduceOp op_;
};

class ScatterOp final : public PiecewiseOp {
 public:
  ScatterOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype, int root)
      : PiecewiseOp(c, in, out, count, dtype, c.group->rank() == root), root_(root) {}

 protected:
  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    Range r = range_of(step, count_, per_step_);
    if (r.len == 0) return;
    size_t me = static_cast<size_t>(group().rank());
    const size_t root = static_cast<size_t>(root_);
    std::memcpy(out_ + r.begin * esize_, piece_of(root, slots[root], me, r), r.len * esize_);
  }

 private:
  int root_;
};

class BarrierOp final : public StepOp {
 public:
  explicit BarrierOp(const CollectiveCall& c) : StepOp(*c.engine, *c.group, c.work, 1) {
    place_small(0);  // no data: the slot's page is never touched
  }

 protected:
  void produce(size_t, uint8_t*) override {}
  void consume(size_t, const std::vector<const uint8_t*>&) override {}
};

// Every step's slot holds a header (the 2N send and receive counts, read in step
// 0) and N pieces, one per destination. Step 0 carries the counts and the first
// piece of data together: every rank checks the whole matrix (what i sends to j
// must be what j expects from i; a mismatch fails on every rank alike, before any
// data is read), then takes its data, and the matrix says how many more steps
// the largest piece needs. So a call whose pieces fit one slot is one step.
// all_to_all. Step 0 carries every rank's counts and where its input is, then
// the pieces go through the slots, a piece of about B/N per pair and step. Some
// pieces skip the slots: the receiver reads them from the sender's input in step
// 0 (one copy instead of two), and a second step makes sure every such read
// finished before anyone returns (and frees its input):
//   - where the group agreed on CMA, pieces of kCmaPairMin to kCmaPairMax bytes,
//     read with process_vm_readv (2 ranks, 128 KiB-512 KiB per rank: about 1.5x
//     faster), and where it prefers single copies (copy_path.h) larger ones too
//     (Intel Xeon, 2 ranks, 4 MiB: 437 -> 388 us, OpenMPI 358-393) and from
//     kCmaPairMinSingleCopy (16 KiB pieces: 3.6 -> 2.5 us, the same with inputs
//     written just before the call; 8 KiB: 2.3 -> 2.0 us, but 2.4 -> 2.9 so);
//     with more ranks than CPUs (where collectives otherwise stage: shm_group.h)
//     pieces from kCmaPairMinOversubscribed, which take several staged steps,
//     each waiting for every rank to be scheduled (4 ranks on 2 cores, 2 MiB
//     pieces: 2.8 -> 1.9 ms; 128 KiB ones gain nothing);
//   - when every rank's input is in the shared arena (`shared_input`), pieces of
//     kSharedPairMin bytes and more, read from the mapped arena. Small calls on
//     shared tensors stay a single step.
// Which pairs are read that way depends only on their count, which sender and
// receiver agree on (the count check runs first).
class AllToAllOp final : public StepOp {
 public:
  AllToAllOp(const CollectiveCall& c, const void* in, Counts send_counts, void* out,
             Counts recv_counts, DType dtype, std::optional<ArenaRef> shared_input)
      : StepOp(*c.engine, *c.group, c.work, 1),
        engine_(*c.engine),
        shared_(shared_input.has_value()),
        in_ref_(shared_input.value_or(ArenaRef{})),
        in_(static_cast<const uint8_t*>(in)),
        out_(static_cast<uint8_t*>(out)),
        send_(std::move(send_counts)),
        recv_(std::move(recv_counts)),
        esize_(element_size(dtype)),
        header_bytes_(all_to_all_header_bytes(send_.size())),
        piece_bytes_(c.group->all_to_all_piece_bytes()),
        per_step_(piece_bytes_ >> std::countr_zero(esize_)),  // sizes are powers of two
        cma_(c.group->cma()),
        cma_pair_min_(cma_pair_min(*c.group)),
        cma_pair_max_(cma_pair_max(*c.group)),
        displ_(2 * send_.size()) {
    const size_t n = send_.size();
    for (size_t i = 1; i < n; ++i) {
      displ_[i] = displ_[i - 1] + send_[i - 1];
      displ_[n + i] = displ_[n + i - 1] + recv_[i - 1];
    }
    // Ranks that passed shared tensors and ranks that did not must not mix.
    // So do ranks that disagree on reading pieces with CMA (they agree on one machine).
    if (shared_) {
      set_variant(2);
    } else if (cma_) {
      set_variant(3);
    }
    size_t received = 0;
    for (size_t c : recv_) received += c;
    stream_output_ = received * esize_ >= kStreamingOutputBytes;
  }

 protected:
  void produce(size_t step, uint8_t* slot) override {
    const size_t n = send_.size();
    if (step == 0) {
      auto* words = reinterpret_cast<uint64_t*>(slot);
      for (size_t j = 0; j < n; ++j) {
        words[j] = send_[j];
        words[n + j] = recv_[j];
      }
      words[2 * n] = reinterpret_cast<uint64_t>(in_);  // for CMA
      words[2 * n + 1] = in_ref_.chunk | static_cast<uint64_t>(in_ref_.present) << 32;
      words[2 * n + 2] = in_ref_.offset;
    }
    const size_t me = static_cast<size_t>(group().rank());
    for (size_t d = 0; d < n; ++d) {
      if (d == me || pulled(send_[d])) continue;  // own piece: input -> output directly
      Range r = range_of(step, send_[d], per_step_);
      if (r.len > 0) {
        std::memcpy(piece(slot, d), in_ + (send_displ(d) + r.begin) * esize_, r.len * esize_);
      }
    }
  }

  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    const size_t n = send_.size();
    const size_t me = static_cast<size_t>(group().rank());
    if (step == 0) {
      check_matrix_and_plan(slots);
      pull_pieces(slots);
      // The own piece goes from input to output at once, never through a slot.
      copy_out(out_ + recv_displ(me) * esize_, in_ + send_displ(me) * esize_, recv_[me] * esize_);
    }
    for (size_t p = 0; p < n; ++p) {
      if (p == me || pulled(recv_[p])) continue;
      Range r = range_of(step, recv_[p], per_step_);
      if (r.len == 0) continue;
      std::memcpy(out_ + (recv_displ(p) + r.begin) * esize_, piece(slots[p], me), r.len * esize_);
    }
  }

 private:
  static constexpr size_t kCmaPairMin = 32u << 10;
  static constexpr size_t kCmaPairMinSingleCopy = 16u << 10;
  static constexpr size_t kCmaPairMinOversubscribed = 512u << 10;
  static constexpr size_t kCmaPairMax = 512u << 10;
  static constexpr size_t kNoLimit = ~size_t{0};

  // Which pieces are read with CMA (above), where the group agreed on CMA.
  static size_t cma_pair_min(const ShmGroup& g) {
    if (!g.cma_for_collectives()) return kCmaPairMinOversubscribed;
    return g.prefers_single_copy() ? kCmaPairMinSingleCopy : kCmaPairMin;
  }
  static size_t cma_pair_max(const ShmGroup& g) {
    return !g.cma_for_collectives() || g.prefers_single_copy() ? kNoLimit : kCmaPairMax;
  }
  static constexpr size_t kSharedPairMin = 8u << 10;

  // Does the piece of `count` elements between two different ranks skip the slots?
  bool pulled(size_t count) const {
    const size_t bytes = count * esize_;
    if (shared_) return bytes >= kSharedPairMin;
    return cma_ && bytes >= cma_pair_min_ && bytes < cma_pair_max_;
  }

  uint8_t* piece(uint8_t* slot, size_t d) const { return slot + header_bytes_ + d * piece_bytes_; }
  const uint8_t* piece(const uint8_t* slot, size_t d) const {
    return slot + header_bytes_ + d * piece_bytes_;
  }

  void check_matrix_and_plan(const std::vector<const uint8_t*>& slots) {
    const size_t n = slots.size();
    check_all_to_all_counts(group(), work()->info(), slots);
    // The same plan on every rank: it reads only the (now agreed) matrix.
    size_t staged_max = 0;
    bool any_pulled = false;
    for (size_t i = 0; i < n; ++i) {
      const auto* counts = reinterpret_cast<const uint64_t*>(slots[i]);
      for (size_t j = 0; j < n; ++j) {
        const size_t c = counts[j];
        if (i == j) continue;  // own pieces: copied in step 0
        if (pulled(c)) {
          any_pulled = true;
        } else {
          staged_max = std::max(staged_max, c);
        }
      }
    }
    nsteps_ = std::max<size_t>(any_pulled ? 2 : 1, steps_for(staged_max, per_step_));
  }

  // Copies a whole piece into this rank's output, with streaming stores when the
  // output is far larger than the caches.
  void copy_out(uint8_t* dst, const uint8_t* src, size_t bytes) const {
    if (bytes == 0) return;
    if (stream_output_) {
      stream_copy(dst, src, bytes);
    } else {
      std::memcpy(dst, src, bytes);
    }
  }

  // Reads the pulled pieces addressed to this rank from their senders' inputs.
  void pull_pieces(const std::vector<const uint8_t*>& slots) {
    const size_t n = slots.size();
    const size_t me = static_cast<size_t>(group().rank());
    for (size_t p = 0; p < n; ++p) {
      if (p == me || !pulled(recv_[p])) continue;
      const auto* words = reinterpret_cast<const uint64_t*>(slots[p]);
      uint64_t from = 0, sent = 0;  // elements before this rank's piece in p's input; all of it
      for (size_t j = 0; j < n; ++j) {
        if (j < me) from += words[j];
        sent += words[j];
      }
      uint8_t* dst = out_ + recv_displ(p) * esize_;
      const int owner = group().world_rank(static_cast<int>(p));
      if (shared_) {
        const ArenaRef ref{static_cast<uint32_t>(words[2 * n + 1]),
                           static_cast<uint32_t>(words[2 * n + 1] >> 32), words[2 * n + 2]};
        if (!ref.present) {
          throw CommError(work()->info().describe() + ": rank " + std::to_string(owner) +
                          " has no input in the shared arena");
        }
        const uint8_t* src = engine_.peer_arenas().resolve(owner, ref, sent * esize_);
        copy_out(dst, src + from * esize_, recv_[p] * esize_);
      } else {
        cma_read(group().pid(static_cast<int>(p)), dst, words[2 * n] + from * esize_,
                 recv_[p] * esize_, owner);
      }
    }
  }

  ShmEngine& engine_;
  bool shared_;
  ArenaRef in_ref_;
  bool stream_output_ = false;
  const uint8_t* in_;
  uint8_t* out_;
  Counts send_, recv_;
  size_t esize_, header_bytes_, piece_bytes_, per_step_;
  bool cma_;
  size_t cma_pair_min_, cma_pair_max_;  // pieces in [min, max) are read with CMA
  Counts displ_;  // where each piece starts: n in the input, then n in the output

  size_t send_displ(size_t rank) const { return displ_[rank]; }
  size_t recv_displ(size_t rank) const { return displ_[send_.size() + rank]; }
};

}  // namespace

size_t check_all_to_all_counts(const ShmGroup& g, const OpInfo& info,
                               const std::vector<const uint8_t*>& headers) {
  const size_t n = headers.size();
  auto counts = [&](size_t rank) { return reinterpret_cast<const uint64_t*>(headers[rank]); };
  std::string mismatches;
  size_t max_count = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      uint64_t sent = counts(i)[j], expected = counts(j)[n + i];
      max_count = std::max<size_t>(max_count, sent);
      if (sent != expected && mismatches.size() < 400) {
        mismatches += " rank " + std::to_string(g.world_rank(static_cast<int>(i))) + " sends " +
                      std::to_string(sent) + " elements to rank " +
                      std::to_string(g.world_rank(static_cast<int>(j))) + ", which expects " +
                      std::to_string(expected) + ";";
      }
    }
  }
  if (!mismatches.empty()) {
    throw CommError(info.describe() + ": send and receive sizes disagree:" + mismatches);
  }
  return max_count;
}

bool all_reduce_algo_forced() { return forced_all_reduce_algo() != AllReduceAlgo::kAuto; }

std::unique_ptr<OpState> make_all_reduce(CollectiveCall c, const void* in, void* out, size_t count,
                                         DType dtype, ReduceOp op) {
  if (use_two_shot(*c.group, count * element_size(dtype))) {
    return std::make_unique<TwoShotAllReduceOp>(c, in, out, count, dtype, op);
  }
  return std::make_unique<AllReduceOp>(c, in, out, count, dtype, op, true);
}
std::unique_ptr<OpState> make_reduce(CollectiveCall c, const void* in, void* out, size_t count,
                                     DType dtype, ReduceOp op, int root) {
  auto reduce = std::make_unique<ReduceToRootOp>(c, in, out, count, dtype, op, root);
  reduce->make_eager(root, /*root_sends=*/false, count * element_size(dtype));
  return reduce;
}
std::unique_ptr<OpState> make_broadcast(CollectiveCall c, const void* in, void* out, size_t count,
                                        DType dtype, int root) {
  auto broadcast = std::make_unique<BroadcastOp>(c, in, out, count, dtype, root);
  broadcast->make_eager(root, /*root_sends=*/true, count * element_size(dtype));
  return broadcast;
}
std::unique_ptr<OpState> make_all_gather(CollectiveCall c, const void* in, void* out, size_t count,
                                         DType dtype) {
  return std::make_unique<AllGatherOp>(c, in, out, count, dtype, true);
}
std::unique_ptr<OpState> make_gather(CollectiveCall c, const void* in, void* out, size_t count,
                                     DType dtype, int root) {
  auto gather = std::make_unique<AllGatherOp>(c, in, out, count, dtype, c.group->rank() == root);
  gather->make_eager(root, /*root_sends=*/false, count * element_size(dtype));
  return gather;
}
std::unique_ptr<OpState> make_reduce_scatter(CollectiveCall c, const void* in, void* out,
                                             size_t count, DType dtype, ReduceOp op) {
  return std::make_unique<ReduceScatterOp>(c, in, out, count, dtype, op);
}
std::unique_ptr<OpState> make_scatter(CollectiveCall c, const void* in, void* out, size_t count,
                                      DType dtype, int root) {
  auto scatter = std::make_unique<ScatterOp>(c, in, out, count, dtype, root);
  scatter->make_eager(root, /*root_sends=*/true, count * element_size(dtype));
  return scatter;
}
std::unique_ptr<OpState> make_barrier(CollectiveCall c) { return std::make_unique<BarrierOp>(c); }
std::unique_ptr<OpState> make_all_to_all(CollectiveCall c, const void* in, Counts send_counts,
                                         void* out, Counts recv_counts, DType dtype,
                                         std::optional<ArenaRef> shared_input) {
  return std::make_unique<AllToAllOp>(c, in, std::move(send_counts), out, std::move(recv_counts),
                                      dtype, shared_input);
}

}  // namespace collie::detail
