#include "backends/shm/collectives.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "backends/shm/engine.h"
#include "backends/shm/step_op.h"
#include "backends/shm/step_range.h"
#include "backends/shm/stream_copy.h"
#include "collie/errors.h"
#include "core/reduce_kernels.h"

namespace collie::detail {
namespace {

// Elements of one rank's contribution that fit in a slot (element sizes are
// powers of two: dtype.h, tested in core_test_dtype).
size_t chunk_elems(const ShmGroup& g, DType dtype) {
  return g.slot_bytes() >> std::countr_zero(element_size(dtype));
}

// Elements of `dtype` in one per-destination piece of a slot (ShmGroup::piece_bytes).
size_t piece_elems(const ShmGroup& g, DType dtype) {
  return g.piece_bytes() >> std::countr_zero(element_size(dtype));
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
  // `contributes`: the rank writes its chunk into its slot each step.
  // `reads_peers`: it reads its peers' chunks out of their slots (a broadcast's
  // root, a reduce's and a gather's non-roots, and an all_reduce without an
  // output wait for their peers' flags but read none of their data).
  // `per_step`: elements per step, a slot's worth unless given (0).
  ChunkedOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
            bool contributes, bool reads_peers, size_t per_step = 0)
      : StepOp(*c.engine, *c.group, c.work,
               steps_for(count, per_step ? per_step : chunk_elems(*c.group, dtype))),
        in_(static_cast<const uint8_t*>(in)),
        out_(static_cast<uint8_t*>(out)),
        count_(count),
        dtype_(dtype),
        esize_(element_size(dtype)),
        per_step_(per_step ? per_step : chunk_elems(*c.group, dtype)),
        contributes_(contributes) {
    // One step of at most kSmallSlotBytes goes in the small slot or the line
    // (place_small, which declares the chunk at the slot's start for prefetching);
    // a larger one's chunk is at its slot's start too.
    const bool small = count <= per_step_ && place_small(count * esize_);
    if (!reads_peers) {
      prefetch_peers_data(0, 0);
    } else if (!small) {
      prefetch_peers_data(0, std::min(count, per_step_) * esize_);
    }
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
      : ChunkedOp(c, in, out, count, dtype, true, has_output), op_(op), has_output_(has_output) {}

 protected:
  // Every rank reduces the N chunks in rank order (bitwise identical results),
  // its own read from its input: the same bytes as its slot, which its peers
  // have read since it wrote them, so that a read there would miss the cache.
  void consume(size_t step, const std::vector<const uint8_t*>& slots) override {
    Range r = range_of(step, count_, per_step_);
    if (!has_output_ || r.len == 0) return;
    std::vector<const uint8_t*>& sources = group().step_sources;
    for (size_t p = 0; p < slots.size(); ++p) sources[p] = slots[p];
    sources[static_cast<size_t>(group().rank())] = in_ + r.begin * esize_;
    reduce_n(out_ + r.begin * esize_, reinterpret_cast<const void* const*>(sources.data()),
             static_cast<int>(sources.size()), r.len, dtype_, op_);
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
      : ChunkedOp(c, in, out, count, dtype, c.group->rank() != root, c.group->rank() == root,
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
  // 128 KiB steps of 16 KiB, which the root reduces while the others copy the
  // next one in (one step was 0.7x at 128 KiB, sixteenth parts of at least 8 KiB
  // 1.3x on the Zen 4 VM; on the Zen 5 Firecracker VM 16 KiB steps took 11-33 %
  // less than those from 32 to 128 KiB after a barrier, 4 KiB ones twice as
  // long); up to 512 KiB halves (16-64 KiB steps there were faster in some runs
  // and slower in others); beyond, quarters of at least 256 KiB — smaller steps
  // there lose more to cache-line traffic between the cores than they gain in
  // overlap (2 MiB in 128 KiB steps took twice as long as in 512 KiB ones on the
  // Zen 4 VM, 16-128 KiB steps up to 9 % longer at 1-8 MiB on the Zen 5 VM). With
  // more ranks than CPUs nothing overlaps and every step waits for every rank to
  // be scheduled, so a slot's worth at a time (4 ranks on 2 cores: 64 KiB 31 ->
  // 17 us, 128 KiB 59 -> 27, 512 KiB 120 -> 78). Depends only on what the
  // fingerprint checks (the oversubscribed form is marked in it), so every rank
  // splits alike.
  static size_t pipelined_elems(const ShmGroup& g, size_t count, DType dtype) {
    const size_t esize = element_size(dtype);
    const size_t bytes = count * esize;
    if (g.config().oversubscribed) return 0;  // a slot's worth (ChunkedOp)
    size_t step = bytes <= (128u << 10)   ? (16u << 10)
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
// (64 KiB: 15 against 28 us; 1 MiB: 293 against 532). Hybrid groups from 128
// KiB (copy_path.h). The thresholds are the group's table (copy_rules.h).
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
  return bytes >= g.copy_rules().all_reduce_two_shot_from;
}

// The root copies each chunk into its slot and, in the same pass, into its own
// output; the others copy it out of the root's slot. Outputs of
// kStreamingOutputBytes or more take streaming stores.
class BroadcastOp final : public ChunkedOp {
 public:
  BroadcastOp(const CollectiveCall& c, const void* in, void* out, size_t count, DType dtype,
              int root)
      : ChunkedOp(c, in, out, count, dtype, c.group->rank() == root, c.group->rank() != root),
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
    // The root copies from its input, not back from its slot (see AllReduceOp).
    const uint8_t* from = contributes_ ? in_ + r.begin * esize_ : slots[static_cast<size_t>(root_)];
    if (stream_) {
      stream_copy(dst, from, r.len * esize_);
    } else {
      std::memcpy(dst, from, r.len * esize_);
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
      : ChunkedOp(c, in, out, count, dtype, true, has_output),
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
    if (!fused_) {  // small: the peers' chunks from their slots, this rank's from its input
      const size_t me = static_cast<size_t>(group().rank());
      for (size_t p = 0; p < slots.size(); ++p) {
        const uint8_t* from = p == me ? in_ + r.begin * esize_ : slots[p];
        std::memcpy(out_ + (p * count_ + r.begin) * esize_, from, r.len * esize_);
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
    // What a rank reads of a peer's step: the piece for it.
    const size_t me = static_cast<size_t>(c.group->rank());
    prefetch_peers_data(me * piece_bytes_, std::min(count, per_step_) * esize_);
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

}  // namespace

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
  reduce->make_eager(root, /*root_sends=*/false);
  return reduce;
}
std::unique_ptr<OpState> make_broadcast(CollectiveCall c, const void* in, void* out, size_t count,
                                        DType dtype, int root) {
  auto broadcast = std::make_unique<BroadcastOp>(c, in, out, count, dtype, root);
  broadcast->make_eager(root, /*root_sends=*/true);
  return broadcast;
}
std::unique_ptr<OpState> make_all_gather(CollectiveCall c, const void* in, void* out, size_t count,
                                         DType dtype) {
  return std::make_unique<AllGatherOp>(c, in, out, count, dtype, true);
}
std::unique_ptr<OpState> make_gather(CollectiveCall c, const void* in, void* out, size_t count,
                                     DType dtype, int root) {
  auto gather = std::make_unique<AllGatherOp>(c, in, out, count, dtype, c.group->rank() == root);
  gather->make_eager(root, /*root_sends=*/false);
  return gather;
}
std::unique_ptr<OpState> make_reduce_scatter(CollectiveCall c, const void* in, void* out,
                                             size_t count, DType dtype, ReduceOp op) {
  return std::make_unique<ReduceScatterOp>(c, in, out, count, dtype, op);
}
std::unique_ptr<OpState> make_scatter(CollectiveCall c, const void* in, void* out, size_t count,
                                      DType dtype, int root) {
  auto scatter = std::make_unique<ScatterOp>(c, in, out, count, dtype, root);
  scatter->make_eager(root, /*root_sends=*/true);
  return scatter;
}
std::unique_ptr<OpState> make_barrier(CollectiveCall c) { return std::make_unique<BarrierOp>(c); }
}  // namespace collie::detail
