#include "backends/shm/shm_group.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backends/shm/cma.h"
#include "backends/shm/copy_path.h"
#include "backends/shm/join_wait.h"
#include "backends/shm/liveness.h"
#include "backends/shm/op_state.h"
#include "collie/errors.h"

namespace collie::detail {
namespace {

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uint64_t make_group_id(const std::string& name, const std::vector<int>& world_ranks,
                       uint64_t incarnation) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  };
  mix(name.data(), name.size());
  for (int r : world_ranks) mix(&r, sizeof(r));
  mix(&incarnation, sizeof(incarnation));
  return h;
}

ShmGroup::ShmGroup(ShmGroupConfig config)
    : config_(std::move(config)),
      layout_(static_cast<int>(config_.world_ranks.size()), config_.slot_bytes, config_.ring_bytes,
              config_.with_rings),
      segments_(config_.world_ranks.size()),
      piece_bytes_(config_.slot_bytes / config_.world_ranks.size() / 64 * 64),
      all_to_all_piece_bytes_(
          detail::all_to_all_piece_bytes(config_.slot_bytes, config_.world_ranks.size())) {
  step_slots.resize(config_.world_ranks.size());
  step_sources.resize(config_.world_ranks.size());
  create_own_segment();
  try {
    map_peers_and_unlink();
  } catch (...) {
    Segment::unlink(segment_name(rank()));
    throw;
  }
}

ShmGroup::~ShmGroup() = default;

std::string ShmGroup::segment_name(int group_rank) const {
  return segment_prefix(config_.job_id) + hex64(config_.group_id) + "-" +
         std::to_string(group_rank);
}

void ShmGroup::create_own_segment() {
  const std::string name = segment_name(rank());
  Segment& mine = segments_[static_cast<size_t>(rank())];
  for (int attempt = 0; !Segment::create(name, layout_.total, &mine); ++attempt) {
    // A segment with our name exists: a leftover of a crashed run with the same job
    // id (remove it), or a live process of another job using the same id (refuse).
    Segment old;
    if (Segment::open(name, &old)) {
      auto* h = static_cast<SegmentHeader*>(old.data());
      pid_t owner = h->magic.load(std::memory_order_acquire) == kSegmentMagic ? h->pid : 0;
      if (owner > 0 && owner != getpid() && process_alive(owner)) {
        throw CommError("shared memory '" + name + "' belongs to live process " +
                        std::to_string(owner) +
                        ": another job is using the same job id (set COLLIE_JOB_ID, or "
                        "launch with `collie run`)");
      }
    }
    Segment::unlink(name);
    if (attempt > 3) throw CommError("cannot create shared memory '" + name + "'");
  }
  auto* h = new (mine.data()) SegmentHeader();
  new (static_cast<uint8_t*>(mine.data()) + layout_.step_control) StepControl();
  if (config_.with_rings) {
    auto* rings =
        reinterpret_cast<RingControl*>(static_cast<uint8_t*>(mine.data()) + layout_.ring_controls);
    for (int i = 0; i < size(); ++i) new (&rings[i]) RingControl();
  }
  h->pid = getpid();
  h->world_rank = world_rank(rank());
  h->group_rank = rank();
  h->nranks = size();
  h->group_id = config_.group_id;
  h->slot_bytes = config_.slot_bytes;
  h->ring_bytes = config_.ring_bytes;
  h->cma_probe = reinterpret_cast<uint64_t>(cma_probe_word());
  h->magic.store(kSegmentMagic, std::memory_order_release);
  // This rank writes all of its segment: slots, and a ring to every peer.
  mine.prefault(0, layout_.total);
  // And writes its rings' lines once, so that the first pass through each ring
  // finds them in its caches instead of memory: the kernel zeroed the pages
  // without leaving them there. AMD Zen 5 VM, 2 ranks, a ring exchange, one
  // call after a barrier: 128 B 1.25-1.32 -> 0.87-0.96 us, 512 B 1.43-1.50 ->
  // 1.19-1.27; the first 20,000 calls back to back of 8 B 0.83 -> 0.76 (later
  // ones 0.63). ~30 us for each 1 MiB ring, once (1.7 ms on the VM of
  // Segment::touch, whose every first access to a page costs).
  if (config_.with_rings) {
    for (int p = 0; p < size(); ++p) {
      if (p != rank()) std::memset(ring_data(rank(), p), 0, config_.ring_bytes);
    }
  }
}

void ShmGroup::map_peers_and_unlink() {
  auto mapped = [&](int g) {
    Segment& seg = segments_[static_cast<size_t>(g)];
    if (seg.data() != nullptr) return true;
    Segment candidate;
    if (!Segment::open(segment_name(g), &candidate)) return false;
    if (candidate.size() < sizeof(SegmentHeader)) return false;
    auto* h = static_cast<SegmentHeader*>(candidate.data());
    if (h->magic.load(std::memory_order_acquire) != kSegmentMagic) return false;
    if (h->group_id != config_.group_id || h->nranks != size() ||
        h->slot_bytes != config_.slot_bytes || h->ring_bytes != config_.ring_bytes ||
        candidate.size() != layout_.total) {
      throw CommError("group '" + config_.name + "': rank " + std::to_string(world_rank(g)) +
                      " uses a different configuration (slot " + std::to_string(h->slot_bytes) +
                      " vs " + std::to_string(config_.slot_bytes) + " bytes, ring " +
                      std::to_string(h->ring_bytes) + " vs " + std::to_string(config_.ring_bytes) +
                      "): set COLLIE_SHM_SLOT_BYTES / COLLIE_P2P_RING_BYTES alike on every rank");
    }
    seg = std::move(candidate);
    // Of a peer's segment this rank touches the header, step lines and slots,
    // and the one ring that peer writes to it (Segment::prefault).
    const size_t rings = config_.with_rings ? layout_.ring_data : layout_.total;
    seg.prefault(0, rings);
    if (config_.with_rings) {
      seg.prefault(rings + static_cast<size_t>(rank()) * config_.ring_bytes, config_.ring_bytes);
    }
    return true;
  };
  // A peer whose segment is not mapped yet has no known pid: not known dead.
  auto dead_if_mapped = [&](int g) {
    return segments_[static_cast<size_t>(g)].data() && !process_alive(header(g).pid);
  };
  wait_for_join_stage(config_, "joining", mapped, dead_if_mapped);
  header(rank()).attached.store(1, std::memory_order_release);
  wait_for_join_stage(
      config_, "joining",
      [&](int g) { return header(g).attached.load(std::memory_order_acquire) != 0; },
      [&](int g) { return !process_alive(header(g).pid); });
  // Every peer has mapped our segment: the name is no longer needed.
  Segment::unlink(segment_name(rank()));
  touch_pages_every_call_reads();
  agree_on_cma();
}

void ShmGroup::touch_pages_every_call_reads() const {
  // Now, not while mapping: every peer has written its rings (it attached after
  // creating its segment), and none can send before this rank's CMA verdict
  // (agree_on_cma), so these reads race with nobody. The large slots are left
  // to the calls that use them (2 MiB a rank: 3 ms to touch on the VM of
  // Segment::touch, a cost only calls of more than 4 KiB would repay).
  for (int g = 0; g < size(); ++g) {
    const Segment& seg = segments_[static_cast<size_t>(g)];
    seg.touch(0, layout_.slots);  // header, step lines, small slots
    if (config_.with_rings && g != rank()) {
      seg.touch(layout_.ring_data + static_cast<size_t>(rank()) * config_.ring_bytes,
                config_.ring_bytes);
    }
  }
}

void ShmGroup::agree_on_cma() {
  cma_allow_peers();
  bool ok = true;
  for (int g = 0; g < size() && ok; ++g) {
    if (g != rank()) ok = cma_probe(header(g).pid, header(g).cma_probe);
  }
  const CopyPath mine = copy_path_preference();
  const uint32_t verdict = !ok                             ? 2
                           : mine == CopyPath::kSingleCopy ? 3
                           : mine == CopyPath::kHybrid     ? 4
                                                           : 1;
  header(rank()).cma_verdict.store(verdict, std::memory_order_release);
  wait_for_join_stage(
      config_, "joining",
      [&](int g) { return header(g).cma_verdict.load(std::memory_order_acquire) != 0; },
      [&](int g) { return !process_alive(header(g).pid); });
  cma_ = true;
  CopyPath agreed = CopyPath::kSingleCopy;  // the most cautious member's
  for (int g = 0; g < size(); ++g) {
    const uint32_t v = header(g).cma_verdict.load(std::memory_order_acquire);
    cma_ = cma_ && v != 2;
    const CopyPath theirs = v == 3   ? CopyPath::kSingleCopy
                            : v == 4 ? CopyPath::kHybrid
                                     : CopyPath::kStaged;
    agreed = std::min(agreed, theirs);
  }
  copy_rules_ = copy_rules_for({.path = agreed,
                                .cma = cma_,
                                .cma_for_collectives = cma_for_collectives(),
                                .group_size = size(),
                                .oversubscribed = config_.oversubscribed,
                                .staged_piece_bytes = piece_bytes_,
                                .staged_all_to_all_piece_bytes = all_to_all_piece_bytes_});
}

}  // namespace collie::detail
