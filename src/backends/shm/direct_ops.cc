#include "backends/shm/direct_ops.h"

#include <algorithm>
#include <cstring>

#include "backends/shm/cma.h"
#include "backends/shm/engine.h"
#include "backends/shm/large_copy.h"
#include "backends/shm/step_op.h"
#include "backends/shm/stream_copy.h"
#include "collie/errors.h"
#include "core/reduce_kernels.h"

namespace collie::detail {
namespace {

// What step 0 publishes in the step line.
struct Descriptor {
  ArenaRef in;
  ArenaRef out;
};
static_assert(sizeof(Descriptor) <= kInlineBytes, "a descriptor travels in the step line");

// Large copies into memory the caller will not read soon go past the cache.
void copy(void* dst, const void* src, size_t n, OutputCopy how) {
  if (n != 0) copy_output(dst, src, n, how);
}

// Streaming stores for an output of `bytes` from kStreamingOutputBytes.
OutputCopy copy_for_output_of(size_t bytes) {
  return bytes >= kStreamingOutputBytes ? OutputCopy::kStreaming : OutputCopy::kCached;
}

// [begin, begin + len) of slice `i` of `count` elements cut into `n` slices whose
// boundaries are multiples of 64 bytes.
struct Slice {
  size_t begin, len;
};
Slice slice_of(size_t i, size_t n, size_t count, size_t esize) {
  const size_t align = std::max<size_t>(1, 64 / esize);
  size_t per = (count + n - 1) / n;
  per = (per + align - 1) / align * align;
  size_t begin = std::min(count, i * per);
  return {begin, std::min(per, count - begin)};
}

// This rank's slice of a CMA reduce of `count` elements to `root`. A non-root
// writes its reduced slice into the root's output with process_vm_writev, a
// copy the root does not make, so with 2 ranks the root takes 3/5 of the
// elements and its peer 2/5 (AMD Zen 5 VM, 2 ranks: per element the read, the
// reduction and the write took about 20, 27 and 20 % of the non-root's time, so
// equal halves left the root waiting a fifth of the call; alternating
// launches: 2 MiB 98-103 -> 85-87 us, 8 MiB 437-459 -> 361-373, 32 MiB
// 2.95-3.38 -> 2.27-2.84 ms, OpenMPI 105-111 us, 526-551 us, 3.58-3.73 ms;
// shares of 55 to 70 % measured, 60 % best). With more ranks each non-root's
// write is a smaller part of its work; not measured there, so the slices stay
// even.
Slice reduce_slice_of(size_t me, size_t root, size_t n, size_t count, size_t esize) {
  if (n != 2) return slice_of(me, n, count, esize);
  // Rank 0's slice first, rank 1's from a boundary that is a multiple of 64 bytes.
  const size_t align = std::max<size_t>(1, 64 / esize);
  const size_t rank0_share = root == 0 ? count * 3 / 5 : count * 2 / 5;
  const size_t boundary = std::min(count, (rank0_share + align - 1) / align * align);
  return me == 0 ? Slice{0, boundary} : Slice{boundary, count - boundary};
}

// The skeleton: step 0 publishes this rank's buffers (in the step line, where
// they travel with the flag), resolves the peers' and runs transfer(); step 1
// waits until every peer has finished its transfer, so that no rank's buffers
// are left while a peer still reads or writes them.
//
// A rooted call whose transfers all go to or from the root's buffers
// (only_root_shared, only_root_uses_peers) waits only where that needs it, as
// an eager call does (step_op.h): in step 0 a rank waits only for the ranks
// whose buffers it touches, in step 1 only for the ranks that touch its own.
// With more ranks than cores a non-root need not wait for every rank to be
// scheduled, nor, with a core each, for the slowest reader of the root.
class DirectOp : public StepOp {
 public:
  DirectOp(const CollectiveCall& c, const DirectBuffers& b, DType dtype)
      : StepOp(*c.engine, *c.group, c.work, 2),
        engine_(*c.engine),
        buffers_(b),
        dtype_(dtype),
        esize_(element_size(dtype)),
        n_(static_cast<size_t>(c.group->size())),
        me_(static_cast<size_t>(c.group->rank())),
        ins_(n_, nullptr),
        outs_(n_, nullptr),
        srcs_(n_, nullptr) {
    set_variant(b.cma ? 3 : 2);
    place_small(sizeof(Descriptor));
    // Peers read and write this rank's buffers directly: they must stay valid
    // even if this rank gives up on the call before its peers are done.
    work()->retain_on_failure();
  }

 protected:
  // The non-roots read or write the root's buffers and nothing else (broadcast,
  // scatter, gather written by its non-roots): a non-root waits for the root
  // in step 0 and for nobody in step 1; the root for nobody in step 0 (it
  // touches only its own buffers) and in step 1 for every rank.
  void only_root_shared(int root) {
    const bool root_here = group().rank() == root;
    wait_at_step_only_for(0, root_here ? kNoRank : root);
    wait_at_step_only_for(1, root_here ? kEveryRank : kNoRank);
  }
  // Only the root touches the peers' buffers, reading them in step 0 (gather
  // read by its root): the root waits for every rank in step 0 and for nobody
  // in step 1; a non-root for nobody in step 0 and in step 1 for the root.
  void only_root_uses_peers(int root) {
    const bool root_here = group().rank() == root;
    wait_at_step_only_for(0, root_here ? kEveryRank : kNoRank);
    wait_at_step_only_for(1, root_here ? kNoRank : root);
  }

  // Bytes of group rank p's input and output that the transfer touches.
  virtual size_t in_bytes(size_t p) const = 0;
  virtual size_t out_bytes(size_t p) const = 0;
  // Moves the data; ins_/outs_ hold every rank's buffers (nullptr where absent).
  virtual void transfer() = 0;

  void produce(size_t step, uint8_t* slot) final {
    if (step != 0) return;
    Descriptor d{buffers_.in_ref, buffers_.out_ref};
    std::memcpy(slot, &d, sizeof d);
  }

  void consume(size_t step, const std::vector<const uint8_t*>& slots) final {
    if (step != 0) return;
    for (size_t p = 0; p < n_; ++p) {
      // Not a rank whose buffers this one never touches.
      if (p == me_ || waits_for(static_cast<int>(p))) resolve(p, slots[p]);
    }
    transfer();
  }

  // Has this rank's transfer with each rank (transfer_with) run as soon as that
  // rank's step 0 shows, its own first, instead of all of them once every
  // rank's has (step_op.h, consume_as_ranks_arrive); transfer() then does the
  // ones not done (consumed_early). For ops whose transfer splits so.
  void transfer_as_ranks_arrive() { consume_as_ranks_arrive(0); }
  // This rank's share of the transfer that touches group rank p's buffers, or
  // this rank's alone for p == me_ (ins_[p], outs_[p] are resolved).
  virtual void transfer_with(size_t /*p*/) {}

  bool consume_arrived(size_t step, int rank, const uint8_t* slot) final {
    if (step != 0) return false;
    const auto p = static_cast<size_t>(rank);
    resolve(p, slot);
    transfer_with(p);
    return true;
  }

  // ins_[p] and outs_[p] from rank p's step 0 (its Descriptor, in `slot`), or
  // this rank's own buffers.
  void resolve(size_t p, const uint8_t* slot) {
    if (p == me_) {
      ins_[p] = static_cast<const uint8_t*>(buffers_.in);
      outs_[p] = static_cast<uint8_t*>(buffers_.out);
      return;
    }
    Descriptor d;
    std::memcpy(&d, slot, sizeof d);
    if (buffers_.cma) {  // addresses in the peer's process, only ever read through pull()
      ins_[p] = d.in.present ? reinterpret_cast<const uint8_t*>(d.in.offset) : nullptr;
      outs_[p] = d.out.present ? reinterpret_cast<uint8_t*>(d.out.offset) : nullptr;
      return;
    }
    const int owner = group().world_rank(static_cast<int>(p));
    ins_[p] = d.in.present ? engine_.peer_arenas().resolve(owner, d.in, in_bytes(p)) : nullptr;
    outs_[p] = d.out.present ? engine_.peer_arenas().resolve(owner, d.out, out_bytes(p)) : nullptr;
  }

  // dst[0, len) = op over ranks, in rank order, of their inputs at `offset` bytes.
  void reduce_inputs(uint8_t* dst, size_t offset, size_t len, ReduceOp op) {
    for (size_t p = 0; p < n_; ++p) srcs_[p] = ins_[p] + offset;
    reduce_n(dst, reinterpret_cast<const void* const*>(srcs_.data()), static_cast<int>(n_), len,
             dtype_, op);
  }

  // Private tensors (CMA): reduces elements [mine.begin, +mine.len) of every
  // rank's input, in rank order, a piece at a time: the peers' pieces are read
  // with process_vm_readv into a buffer here and reduced with this rank's input
  // into `own_out` (this rank's output, or nullptr: a buffer), and the result is
  // written into the outputs of `to` (a group rank, or kAll: every peer) with
  // process_vm_writev while it is still in cache. Each byte crosses once, copied
  // by the kernel; nothing is staged.
  static constexpr size_t kAll = ~size_t{0};
  void reduce_slice_through_cma(Slice mine, ReduceOp op, uint8_t* own_out, size_t to) {
    if (mine.len == 0) return;
    // 256 KiB pieces: the peers' pieces, this rank's input and the result stay in
    // L2 between the read, the reduction and the writes, and the two system calls
    // per piece cost a few percent (64 KiB pieces: 4 MiB all_reduce 12 % slower).
    const size_t piece = std::max<size_t>(1, (256u << 10) / esize_);
    const size_t piece_bytes = piece * esize_;
    // Kept per thread: a fresh buffer this large would be mapped and faulted in
    // on every call.
    thread_local std::vector<uint8_t> scratch;
    const size_t need = (n_ - 1 + (own_out == nullptr ? 1 : 0)) * piece_bytes;
    if (scratch.size() < need) scratch.resize(need);
    uint8_t* result_buffer = scratch.data() + (n_ - 1) * piece_bytes;
    for (size_t at = 0; at < mine.len; at += piece) {
      const size_t len = std::min(piece, mine.len - at);
      const size_t off = (mine.begin + at) * esize_;
      // Peers in turn from the next rank on (as DirectAllGather reads them), so
      // that the ranks read and write different processes' memory at any moment,
      // not every rank rank 0's first; the reduction still takes the inputs in
      // rank order (srcs_), so results do not change.
      srcs_[me_] = ins_[me_] + off;
      for (size_t i = 1; i < n_; ++i) {
        const size_t p = (me_ + i) % n_;
        uint8_t* buffer = scratch.data() + (i - 1) * piece_bytes;
        pull(buffer, p, ins_[p] + off, len * esize_, OutputCopy::kCached);
        srcs_[p] = buffer;
      }
      uint8_t* result = own_out != nullptr ? own_out + off : result_buffer;
      reduce_n(result, reinterpret_cast<const void* const*>(srcs_.data()), static_cast<int>(n_),
               len, dtype_, op);
      for (size_t i = 1; i < n_; ++i) {
        const size_t p = (me_ + i) % n_;
        if (to == kAll || to == p) push(p, outs_[p] + off, result, len * esize_);
      }
    }
  }

  // Copies n bytes from `src` here to rank p's memory at `dst` (from outs_),
  // as `how` says where this process makes the copy.
  void push(size_t p, uint8_t* dst, const void* src, size_t n,
            OutputCopy how = OutputCopy::kCached) const {
    if (!buffers_.cma || p == me_) {
      copy(dst, src, n, how);
    } else if (n > 0) {
      const int peer = static_cast<int>(p);
      cma_write(group().pid(peer), reinterpret_cast<uint64_t>(dst), src, n,
                group().world_rank(peer));
    }
  }

  // Copies n bytes of rank p's memory at `src` (from ins_/outs_) to `dst` here.
  void pull(void* dst, size_t p, const uint8_t* src, size_t n, OutputCopy how) const {
    if (!buffers_.cma || p == me_) {
      copy(dst, src, n, how);
    } else if (n > 0) {
      const int peer = static_cast<int>(p);
      cma_read(group().pid(peer), dst, reinterpret_cast<uint64_t>(src), n, group().world_rank(peer));
    }
  }

  ShmEngine& engine_;
  DirectBuffers buffers_;
  DType dtype_;
  size_t esize_;
  size_t n_, me_;
  std::vector<const uint8_t*> ins_;
  std::vector<uint8_t*> outs_;

 private:
  std::vector<const uint8_t*> srcs_;  // scratch of reduce_inputs()
};

// Same-sized buffers on every rank: `in_elems` in, `out_elems` out (0: none).
class SymmetricOp : public DirectOp {
 public:
  SymmetricOp(const CollectiveCall& c, const DirectBuffers& b, DType dtype, size_t in_elems,
              size_t out_elems, int out_rank = -1)
      : DirectOp(c, b, dtype), in_elems_(in_elems), out_elems_(out_elems), out_rank_(out_rank) {}

 protected:
  size_t in_bytes(size_t) const override { return in_elems_ * esize_; }
  size_t out_bytes(size_t p) const override {
    return out_rank_ < 0 || p == static_cast<size_t>(out_rank_) ? out_elems_ * esize_ : 0;
  }
  uint8_t* out_of(size_t p) const {
    uint8_t* o = outs_[p];
    if (o == nullptr && out_bytes(p) > 0) {
      throw CommError(work()->info().describe() + ": rank " +
                      std::to_string(group().world_rank(static_cast<int>(p))) +
                      " has no output in the shared arena");
    }
    return o;
  }

  size_t in_elems_, out_elems_;
  int out_rank_;  // the only rank with an output (rooted ops), -1: all
};

// Each rank reduces its slice of the N inputs, a cache-sized piece at a time,
// into its own output and copies the piece into every peer's output while it is
// still in cache.
class DirectAllReduce final : public SymmetricOp {
 public:
  DirectAllReduce(const CollectiveCall& c, const DirectBuffers& b, size_t count, DType dtype,
                  ReduceOp op)
      : SymmetricOp(c, b, dtype, count, count), count_(count), op_(op) {}

 protected:
  void transfer() override {
    if (buffers_.cma) {
      return reduce_slice_through_cma(slice_of(me_, n_, count_, esize_), op_, out_of(me_), kAll);
    }
    Slice mine = slice_of(me_, n_, count_, esize_);
    const size_t piece = std::max<size_t>(1, (256u << 10) / esize_);
    const OutputCopy how = copy_for_output_of(count_ * esize_);
    uint8_t* own = out_of(me_);
    for (size_t at = 0; at < mine.len; at += piece) {
      const size_t len = std::min(piece, mine.len - at);
      const size_t off = (mine.begin + at) * esize_;
      reduce_inputs(own + off, off, len, op_);
      for (size_t p = 0; p < n_; ++p) {
        if (p != me_) copy(out_of(p) + off, own + off, len * esize_, how);
      }
    }
  }

 private:
  size_t count_;
  ReduceOp op_;
};

// Each rank reduces its slice of the N inputs into the root's output.
class DirectReduce final : public SymmetricOp {
 public:
  DirectReduce(const CollectiveCall& c, const DirectBuffers& b, size_t count, DType dtype,
               ReduceOp op, int root)
      : SymmetricOp(c, b, dtype, count, count, root), count_(count), op_(op) {}

 protected:
  void transfer() override {
    const size_t root = static_cast<size_t>(out_rank_);
    if (buffers_.cma) {
      Slice mine = reduce_slice_of(me_, root, n_, count_, esize_);
      return reduce_slice_through_cma(mine, op_, me_ == root ? out_of(me_) : nullptr, root);
    }
    Slice mine = slice_of(me_, n_, count_, esize_);
    if (mine.len == 0) return;
    const size_t off = mine.begin * esize_;
    reduce_inputs(out_of(root) + off, off, mine.len, op_);
  }

 private:
  size_t count_;
  ReduceOp op_;
};

class DirectBroadcast final : public SymmetricOp {
 public:
  DirectBroadcast(const CollectiveCall& c, const DirectBuffers& b, size_t count, DType dtype,
                  int root)
      : SymmetricOp(c, b, dtype, count, count), root_(static_cast<size_t>(root)) {
    only_root_shared(root);
  }

 protected:
  void transfer() override {
    const size_t bytes = in_elems_ * esize_;
    pull(out_of(me_), root_, ins_[root_], bytes, copy_for_output_of(bytes));
  }

 private:
  size_t root_;
};

// With CMA, inputs of less than kAllGatherPushBelowBytes per rank are written
// by their owners into every output (its own first, then the next rank's on),
// larger ones read by each rank from their owners. process_vm_readv and
// process_vm_writev pin the peer's pages, one 4 KiB page at a time except on
// huge pages, and collie's tensors ask for huge pages from 2 MiB: a gathered
// output of 2 MiB or more is on them while the inputs it gathers are not (2
// ranks, alternating launches, µs, gathered output: 2 MiB read 117-126, written
// 57-63, OpenMPI 123-126; 256 KiB to 1 MiB, written, even or up to 15 % less;
// 4 MiB, with 2 MiB inputs on huge pages, read 108-119 against written
// 116-124, and 8-32 MiB even within the noise). With more than
// kCmaMaxReadersOfOneProcess peers, each output would have as many writers
// queued on its pages: read as before.
inline constexpr size_t kAllGatherPushBelowBytes = 2u << 20;

// From kAllGatherEarlyBytes per rank a rank moves its piece to (or the piece
// from) each rank as soon as that rank's step 0 shows, its own first
// (transfer_as_ranks_arrive), instead of once every rank has come: with more
// ranks than cores the ranks that run first do their share while the others
// wait for a core.
inline constexpr size_t kAllGatherEarlyBytes = 64u << 10;

class DirectAllGather final : public SymmetricOp {
 public:
  DirectAllGather(const CollectiveCall& c, const DirectBuffers& b, size_t count, DType dtype)
      : SymmetricOp(c, b, dtype, count, count * static_cast<size_t>(c.group->size())),
        bytes_(count * esize_),
        output_copy_(gathered_output_copy(out_elems_ * esize_)),
        push_(b.cma && bytes_ < kAllGatherPushBelowBytes &&
              n_ - 1 <= static_cast<size_t>(kCmaMaxReadersOfOneProcess)) {
    if (bytes_ >= kAllGatherEarlyBytes) transfer_as_ranks_arrive();
    // Step 1 waits for the peers that read this rank's input (or write its
    // output) to say they are done, not for every rank to be done with all.
    wait_at_step_only_until_done_with_me(1);
  }

 protected:
  bool done_with_me() const override {
    return group().control(group().rank()).transfers_done.load(std::memory_order_acquire) >=
           done_target_;
  }

  void transfer() override {
    // Every peer reads this rank's input, or writes into its output, once.
    if (group().counts_transfers()) group().transfers_done_target += n_ - 1;
    done_target_ = group().transfers_done_target;
    // Pushed: this rank's own output first, then the next rank's on. Pulled:
    // each rank starts with the next rank's piece, so with N > 2 the ranks read
    // different sources at any moment instead of all reading rank 0 first.
    for (size_t i = push_ ? 0 : 1; i <= n_ - (push_ ? 1 : 0); ++i) {
      const size_t p = (me_ + i) % n_;
      if (!consumed_early(p)) transfer_with(p);
    }
  }

  void transfer_with(size_t p) override {
    if (push_) {
      push(p, out_of(p) + me_ * bytes_, ins_[me_], bytes_, output_copy_);
    } else {
      pull(out_of(me_) + p * bytes_, p, ins_[p], bytes_, output_copy_);
    }
    // p may return once every peer has said so (done_with_me).
    if (p != me_ && group().counts_transfers()) {
      group().control(static_cast<int>(p)).transfers_done.fetch_add(1, std::memory_order_release);
    }
  }

 private:
  uint64_t done_target_ = 0;  // what this rank's transfers_done must reach (transfer())
  size_t bytes_;              // per rank
  OutputCopy output_copy_;    // how the own piece goes into the gathered output
  bool push_;     // each rank writes its input into every output (else reads every input)
};

// Each rank writes its own piece into the root's output: in the arena directly,
// with CMA through process_vm_writev, so that the non-roots' copies and the
// root's own run at once; the root reading every piece copied them one after
// another (2 ranks, alternating launches, µs, read -> written: 256 KiB per
// rank 19.7-20.1 -> 11.7-12.6, 1 MiB 93-99 -> 26-34, 4 MiB 222-246 -> 124-144,
// 16 MiB 1,774-1,960 -> 1,334-1,456; OpenMPI 18-34, 92-101, 180-194,
// 1,497-1,588). With more than kCmaMaxReadersOfOneProcess non-roots the root
// still reads them in turn where every rank has a CPU: writers into one process
// would queue on its pages as readers of one do (direct_ops.h). With more ranks
// than CPUs no more writers than CPUs run at once, each into pages of its own,
// and the root's reads one after another took 3-7x as long (fifty-ninth
// session, AMD Zen 5 VM, 2 CPUs, roots rotating, alternating launches, median /
// slowest rank µs, read -> written, OpenMPI in brackets: 8 ranks, 1 MiB per rank
// 1,752-2,067 / 1,792-2,134 -> 239-281 / 312 (2,114-2,619 / 3,006-4,022); 16
// ranks, 1 MiB 3,330-3,381 / 3,429-3,567 -> 542-1,084 / 1,234-1,332 (5,489-5,563
// / 16,460-17,440)). Every rank counts the same CPUs, so all choose alike.
class DirectGather final : public SymmetricOp {
 public:
  DirectGather(const CollectiveCall& c, const DirectBuffers& b, size_t count, DType dtype, int root)
      : SymmetricOp(c, b, dtype, count, count * static_cast<size_t>(c.group->size()), root),
        pushed_(!b.cma || n_ - 1 <= static_cast<size_t>(kCmaMaxReadersOfOneProcess) ||
                c.group->config().oversubscribed) {
    if (pushed_) {
      only_root_shared(root);
    } else {
      only_root_uses_peers(root);
    }
  }

 protected:
  void transfer() override {
    const size_t bytes = in_elems_ * esize_;
    const OutputCopy how = copy_for_output_of(bytes * n_);
    const size_t root = static_cast<size_t>(out_rank_);
    if (pushed_) {
      push(root, out_of(root) + me_ * bytes, ins_[me_], bytes, how);
    } else if (me_ == root) {
      for (size_t i = 0; i < n_; ++i) {  // this rank's own piece first, then the others in turn
        const size_t p = (me_ + i) % n_;
        pull(out_of(root) + p * bytes, p, ins_[p], bytes, how);
      }
    }
  }

 private:
  bool pushed_;  // each rank writes its piece (else the root reads them in turn)
};

class DirectReduceScatter final : public SymmetricOp {
 public:
  DirectReduceScatter(const CollectiveCall& c, const DirectBuffers& b, size_t count, DType dtype,
                      ReduceOp op)
      : SymmetricOp(c, b, dtype, count * static_cast<size_t>(c.group->size()), count),
        count_(count),
        op_(op) {}

 protected:
  void transfer() override {
    if (count_ == 0) return;
    reduce_inputs(out_of(me_), me_ * count_ * esize_, count_, op_);
  }

 private:
  size_t count_;
  ReduceOp op_;
};

class DirectScatter final : public SymmetricOp {
 public:
  DirectScatter(const CollectiveCall& c, const DirectBuffers& b, size_t count, DType dtype,
                int root)
      : SymmetricOp(c, b, dtype, count * static_cast<size_t>(c.group->size()), count),
        count_(count),
        root_(static_cast<size_t>(root)) {
    only_root_shared(root);
  }

 protected:
  void transfer() override {
    const size_t bytes = count_ * esize_;
    pull(out_of(me_), root_, ins_[root_] + me_ * bytes, bytes, copy_for_output_of(bytes));
  }

 private:
  size_t count_;
  size_t root_;
};

}  // namespace

DirectBuffers cma_buffers(const void* in, void* out) {
  DirectBuffers b{in, ArenaRef{0, 1, reinterpret_cast<uint64_t>(in)}, out, ArenaRef{}, true};
  if (out != nullptr) b.out_ref = ArenaRef{0, 1, reinterpret_cast<uint64_t>(out)};
  return b;
}

std::unique_ptr<OpState> make_direct_all_reduce(CollectiveCall c, DirectBuffers b, size_t count,
                                                DType dtype, ReduceOp op) {
  return std::make_unique<DirectAllReduce>(c, b, count, dtype, op);
}
std::unique_ptr<OpState> make_direct_reduce(CollectiveCall c, DirectBuffers b, size_t count,
                                            DType dtype, ReduceOp op, int root) {
  return std::make_unique<DirectReduce>(c, b, count, dtype, op, root);
}
std::unique_ptr<OpState> make_direct_broadcast(CollectiveCall c, DirectBuffers b, size_t count,
                                               DType dtype, int root) {
  return std::make_unique<DirectBroadcast>(c, b, count, dtype, root);
}
std::unique_ptr<OpState> make_direct_all_gather(CollectiveCall c, DirectBuffers b, size_t count,
                                                DType dtype) {
  return std::make_unique<DirectAllGather>(c, b, count, dtype);
}
std::unique_ptr<OpState> make_direct_gather(CollectiveCall c, DirectBuffers b, size_t count,
                                            DType dtype, int root) {
  return std::make_unique<DirectGather>(c, b, count, dtype, root);
}
std::unique_ptr<OpState> make_direct_reduce_scatter(CollectiveCall c, DirectBuffers b,
                                                    size_t count, DType dtype, ReduceOp op) {
  return std::make_unique<DirectReduceScatter>(c, b, count, dtype, op);
}
std::unique_ptr<OpState> make_direct_scatter(CollectiveCall c, DirectBuffers b, size_t count,
                                             DType dtype, int root) {
  return std::make_unique<DirectScatter>(c, b, count, dtype, root);
}

}  // namespace collie::detail
