#include "backends/shm/p2p.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/shm/huge_page_probe.h"
#include "backends/shm/liveness.h"
#include "collie/errors.h"
#include "runtime/coarse_clock.h"

namespace collie::detail {
namespace {

// Where stream position `pos` falls in a ring of `size` bytes. Rings are a power
// of two unless COLLIE_P2P_RING_BYTES says otherwise: then a mask, not a 64-bit
// division (tens of cycles, several per message).
uint64_t ring_offset(uint64_t size, uint64_t pos) {
  return (size & (size - 1)) == 0 ? pos & (size - 1) : pos % size;
}

// Copies into / out of a ring of `size` bytes at stream position `pos`, wrapping.
// Inlined, so that a header's or address's fixed size makes its copy a few moves
// instead of a call to memcpy (each message writes a header and reads it back).
[[gnu::always_inline]] inline void ring_write(uint8_t* ring, uint64_t size, uint64_t pos, const void* src, uint64_t n) {
  uint64_t at = ring_offset(size, pos);
  uint64_t first = std::min(n, size - at);
  std::memcpy(ring + at, src, first);
  if (n > first) std::memcpy(ring, static_cast<const uint8_t*>(src) + first, n - first);
}

[[gnu::always_inline]] inline void ring_read(const uint8_t* ring, uint64_t size, uint64_t pos, void* dst, uint64_t n) {
  uint64_t at = ring_offset(size, pos);
  uint64_t first = std::min(n, size - at);
  if (dst != nullptr) {
    std::memcpy(dst, ring + at, first);
    if (n > first) std::memcpy(static_cast<uint8_t*>(dst) + first, ring, n - first);
  }
}

// Asks for the cache lines that hold the 64 bytes from stream position `pos`:
// a header there and the first 32 bytes of its payload, the whole of a small
// message. A receiver issues it with each look at the ring's head, so that a
// message's bytes travel with the head that announces them instead of being
// fetched after it, one cross-core transfer after the other (~0.2 us each on
// the Firecracker VM; the step flags' prefetch in step_op.cc is the same idea).
// Only a hint: the bytes are read after the head, as before. 2 ranks,
// batch_isend_irecv after a barrier, the slower rank's median, alternating
// launches: 8 B 0.73-1.26 -> 0.66-0.91 us and, in another phase of the VM,
// 0.97-1.05 -> 0.86-0.89; 64 B 0.97-1.10 -> 0.89-0.93; 512 B 1.05-1.19 ->
// 0.85-1.01; back to back, 8 B 0.65-0.82 -> 0.56-0.65.
[[gnu::always_inline]] inline void prefetch_message_at(const uint8_t* ring, uint64_t size,
                                                       uint64_t pos) {
  const uint64_t at = ring_offset(size, pos);
  __builtin_prefetch(ring + at, 0, 3);
  // The second line, if the 64 bytes reach into it (wrapping to the ring's start).
  if ((at & 63) != 0) __builtin_prefetch(ring + (at + 64 < size ? at + 64 : 0), 0, 3);
}

// Which messages are pulled (p2p.h): COLLIE_P2P_PULL=always|never|auto; auto:
// those that do not fit the ring when there are more ranks than CPUs, and those
// of kPullFromBytes (kPullFromBytesOversubscribed) or more too where the world
// prefers single copies (hybrid worlds: from kHybridSingleCopyMinBytes, and
// as staged ones with more ranks than CPUs; copy_rules.h); elsewhere those that
// do not fit the ring and lie on huge pages. Messages in the shared arena: from kArenaPullFromBytes
// (kPullFromBytesOversubscribed), and beyond the ring, unless never.
P2PMatcher::PullRule pull_rule(const ShmGroup& world) {
  using Rule = P2PMatcher::PullRule;
  constexpr uint64_t kNever = Rule::kNever;
  const bool oversubscribed = world.config().oversubscribed;
  const uint64_t from_bytes =
      oversubscribed ? P2PMatcher::kPullFromBytesOversubscribed : P2PMatcher::kPullFromBytes;
  const uint64_t arena_from_bytes =
      oversubscribed ? P2PMatcher::kPullFromBytesOversubscribed : P2PMatcher::kArenaPullFromBytes;
  const char* v = std::getenv("COLLIE_P2P_PULL");
  const std::string policy = v != nullptr ? v : "auto";
  if (policy == "always")
    return Rule{true, from_bytes, false, std::min(from_bytes, arena_from_bytes)};
  if (policy == "never") return Rule{false, kNever, false, kNever};
  if (policy != "auto" && !policy.empty()) {
    throw ValueError("environment variable COLLIE_P2P_PULL='" + policy +
                     "' is not auto, always or never");
  }
  // Where the world's table (copy_rules.h) has a size to pull from, the
  // single-copy rule; otherwise the staged one.
  const uint64_t pull_from = world.copy_rules().p2p_pull_from;
  if (pull_from != SizeRange::kUnbounded) return Rule{true, pull_from, false, arena_from_bytes};
  return Rule{oversubscribed, kNever, /*beyond_ring_on_huge_pages=*/true, arena_from_bytes};
}

double seconds_since(std::chrono::steady_clock::time_point t,
                     std::chrono::steady_clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

}  // namespace

std::string describe(const SendRequest& r) {
  return r.work->info().describe_transfer(/*is_send=*/true, r.dst, r.tag);
}

std::string describe(const RecvRequest& r) {
  return r.work->info().describe_transfer(/*is_send=*/false, r.src, r.tag);
}

P2PMatcher::P2PMatcher(ShmGroup& world, PeerArenas& peer_arenas,
                       std::function<void(int, Ring)> ring, std::function<void(bool)> finished)
    : world_(world),
      peer_arenas_(peer_arenas),
      ring_(std::move(ring)),
      finished_(std::move(finished)),
      sends_(static_cast<size_t>(world.size())),
      awaiting_pull_(static_cast<size_t>(world.size())),
      pulls_sent_(static_cast<size_t>(world.size()), 0),
      known_tail_(static_cast<size_t>(world.size()), 0),
      sent_head_(static_cast<size_t>(world.size()), 0),
      pulls_seen_(static_cast<size_t>(world.size()), 0),
      channel_broken_(static_cast<size_t>(world.size()), false),
      source_broken_(static_cast<size_t>(world.size()), false),
      posted_(static_cast<size_t>(world.size())),
      unexpected_(static_cast<size_t>(world.size())),
      incoming_(static_cast<size_t>(world.size())),
      pull_(pull_rule(world)) {}

void P2PMatcher::complete(Work& work, std::exception_ptr error) {
  const bool blocking = work.info().blocking;
  if (error)
    work.fail(error);
  else
    work.complete();
  finished_(blocking);
}

bool P2PMatcher::matches(const MessageHeader& h, const RecvRequest& r) {
  return h.group_id == r.group_id && h.tag == r.tag;
}

std::exception_ptr P2PMatcher::size_mismatch(int src, const MessageHeader& h,
                                             const RecvRequest& r) const {
  auto dtype_of_code = [](uint32_t code) {
    return code < kNumDTypes ? std::string(dtype_name(static_cast<DType>(code))) : std::string("?");
  };
  return std::make_exception_ptr(CommError(
      describe(r) + ": rank " + std::to_string(src) + " sent " + std::to_string(h.nbytes) +
      " bytes of " + dtype_of_code(h.dtype) + " but this receive expects " +
      std::to_string(r.nbytes) + " bytes of " + std::string(dtype_name(r.dtype)) +
      " (shapes and dtypes of send and recv must match)"));
}

void P2PMatcher::add_send(SendRequest request) {
  int dst = request.dst;
  if (channel_broken_[static_cast<size_t>(dst)]) {
    complete(*request.work, std::make_exception_ptr(CommError(
                                describe(request) + ": the channel to rank " + std::to_string(dst) +
                                " broke in an earlier failed send")));
    return;
  }
  const bool beyond_ring = request.nbytes + sizeof(MessageHeader) > world_.ring_bytes();
  const bool remote = dst != world_.rank();
  const bool pull_any = request.nbytes >= pull_.from_bytes || (beyond_ring && pull_.beyond_ring);
  // Data in the shared arena is pulled from it from arena_from_bytes, and beyond
  // the ring (p2p.h).
  ArenaRef arena;
  if (remote && (request.nbytes >= pull_.arena_from_bytes ||
                 (beyond_ring && pull_.arena_from_bytes != PullRule::kNever))) {
    arena = SharedArena::instance().locate(request.data, request.nbytes);
  }
  const bool pulled =
      arena.present != 0 || (world_.cma() && remote &&
                             (pull_any || (beyond_ring && pull_.beyond_ring_on_huge_pages &&
                                           lies_on_huge_pages(request.data, request.nbytes))));
  sends_[static_cast<size_t>(dst)].push_back(
      Send{std::move(request), false, 0, coarse_now(), pulled, 0, arena});
}

void P2PMatcher::add_recv(RecvRequest request) {
  if (source_broken_[static_cast<size_t>(request.src)]) {
    complete(*request.work, std::make_exception_ptr(CommError(
                                describe(request) + ": the p2p stream from rank " +
                                std::to_string(request.src) + " broke earlier (corrupt data)")));
    return;
  }
  Recv recv{std::move(request), coarse_now()};
  auto& list = unexpected_[static_cast<size_t>(recv.req.src)];
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->claimant || !matches(it->header, recv.req)) continue;
    if (it->received == it->header.nbytes) {
      const bool pulled_now = it->deferred;
      deliver_unexpected(*it, recv);
      list.erase(it);
      if (pulled_now) acknowledge_pulls(recv.req.src);
    } else {
      it->claimant = std::move(recv);  // delivered when the rest arrives
    }
    return;
  }
  posted_[static_cast<size_t>(recv.req.src)].push_back(std::move(recv));
}

bool P2PMatcher::send_at_once(Work& work, SendRequest& r) {
  const int me = world_.rank();
  const auto dst = static_cast<size_t>(r.dst);
  const uint64_t size = world_.ring_bytes();
  const uint64_t wanted = sizeof(MessageHeader) + r.nbytes;
  // Never a message add_send would pull (it fits the ring and is below
  // pull_.from_bytes), nor one that would overtake an earlier send.
  if (channel_broken_[dst] || !sends_[dst].empty() || !awaiting_pull_[dst].empty() ||
      wanted > size || r.nbytes >= pull_.from_bytes) {
    return false;
  }
  // Nor one add_send would pull from the shared arena.
  if (r.nbytes >= pull_.arena_from_bytes &&
      SharedArena::instance().locate(r.data, r.nbytes).present)
    return false;
  RingControl& ctl = world_.ring_control(me, r.dst);
  uint64_t& head = sent_head_[dst];
  uint64_t& tail = known_tail_[dst];  // may lag: then less room
  if (size - (head - tail) < wanted) {
    tail = ctl.tail.load(std::memory_order_acquire);
    if (size - (head - tail) < wanted) return false;
  }
  uint8_t* ring = world_.ring_data(me, r.dst);
  const MessageHeader h{kMessageMagic, static_cast<uint32_t>(r.dtype), r.tag, r.group_id, r.nbytes};
  ring_write(ring, size, head, &h, sizeof(h));
  ring_write(ring, size, head + sizeof(h), r.data, r.nbytes);
  head += wanted;
  ctl.head.store(head, std::memory_order_release);
  complete(work, nullptr);
  ring_(r.dst, Ring::kBytes);
  return true;
}

bool P2PMatcher::receive_at_once(Work& work, RecvRequest& r) {
  const int me = world_.rank();
  const auto src = static_cast<size_t>(r.src);
  Incoming& in = incoming_[src];
  // Anything posted or buffered from the source comes first (matching order).
  if (source_broken_[src] || in.in_payload || !posted_[src].empty() || !unexpected_[src].empty()) {
    return false;
  }
  RingControl& ctl = world_.ring_control(r.src, me);
  const uint8_t* ring = world_.ring_data(r.src, me);
  const uint64_t size = world_.ring_bytes();
  prefetch_message_at(ring, size, in.tail);  // its transfer overlaps the head's
  const uint64_t head = ctl.head.load(std::memory_order_acquire);
  if (head - in.tail < sizeof(MessageHeader) + r.nbytes) return false;
  MessageHeader h;
  ring_read(ring, size, in.tail, &h, sizeof(h));
  // Exactly what this receive expects, or the general path (which also judges
  // corrupt headers and mismatches).
  if (h.magic != kMessageMagic || !matches(h, r) || h.nbytes != r.nbytes ||
      h.dtype != static_cast<uint32_t>(r.dtype)) {
    return false;
  }
  ring_read(ring, size, in.tail + sizeof(h), r.data, r.nbytes);
  in.tail += sizeof(h) + r.nbytes;
  ctl.tail.store(in.tail, std::memory_order_release);
  complete(work, nullptr);
  ring_(r.src, Ring::kBytes);  // the sender may be waiting for space
  return true;
}

void P2PMatcher::deliver_unexpected(Unexpected& u, Recv& r) {
  if (u.deferred) return deliver_pulled(u, r);
  if (!u.error.empty()) {
    complete(*r.req.work, std::make_exception_ptr(CommError(describe(r.req) + ": " + u.error)));
    return;
  }
  if (u.header.nbytes != r.req.nbytes || u.header.dtype != static_cast<uint32_t>(r.req.dtype)) {
    complete(*r.req.work, size_mismatch(r.req.src, u.header, r.req));
    return;
  }
  if (u.header.nbytes > 0) std::memcpy(r.req.data, u.data.data(), u.header.nbytes);
  complete(*r.req.work, nullptr);
}

bool P2PMatcher::advance(Runner runner) {
  bool moved = has_deferred() && buffer_deferred_pulls(/*all=*/false, runner);
  const int me = world_.rank();
  const uint64_t size = world_.ring_bytes();
  for (int peer = 0; peer < world_.size(); ++peer) {
    const uint64_t tail = incoming_[static_cast<size_t>(peer)].tail;
    prefetch_message_at(world_.ring_data(peer, me), size, tail);
    // advance_incoming does nothing while no byte came since it last read: one
    // look at the head here, not a call per source on every pass of a waiting
    // caller (2 ranks: an idle pass took ~500 instructions, half of them here).
    if (world_.ring_control(peer, me).head.load(std::memory_order_acquire) != tail) {
      moved |= advance_incoming(peer);
    }
    if (!sends_[static_cast<size_t>(peer)].empty() ||
        !awaiting_pull_[static_cast<size_t>(peer)].empty()) {
      moved |= advance_sends(peer);
    }
  }
  return moved;
}

bool P2PMatcher::advance_sends(int dst) {
  auto& queue = sends_[static_cast<size_t>(dst)];
  RingControl& ctl = world_.ring_control(world_.rank(), dst);
  uint8_t* ring = world_.ring_data(world_.rank(), dst);
  const uint64_t size = world_.ring_bytes();
  uint64_t& head = sent_head_[static_cast<size_t>(dst)];
  uint64_t& tail = known_tail_[static_cast<size_t>(dst)];    // may lag: then less room
  bool moved = false;
  while (!queue.empty()) {
    Send& s = queue.front();
    // A pulled message is its header and where its payload lies.
    const uint64_t location_bytes = s.arena.present ? sizeof(ArenaRef) : sizeof(uint64_t);
    const uint64_t wanted =
        s.pulled ? sizeof(MessageHeader) + location_bytes
                 : (s.header_written ? 0 : sizeof(MessageHeader)) + (s.req.nbytes - s.sent);
    if (size - (head - tail) < wanted) tail = ctl.tail.load(std::memory_order_acquire);
    uint64_t space = size - (head - tail);
    if (s.pulled) {
      // Header and location are published together (one head update), so a
      // receiver that sees the header sees where the payload is.
      if (space < wanted) break;
      const uint32_t magic = s.arena.present ? kArenaPulledMessageMagic : kPulledMessageMagic;
      MessageHeader h{magic, static_cast<uint32_t>(s.req.dtype), s.req.tag, s.req.group_id,
                      s.req.nbytes};
      ring_write(ring, size, head, &h, sizeof(h));
      if (s.arena.present) {
        ring_write(ring, size, head + sizeof(h), &s.arena, sizeof s.arena);
      } else {
        const uint64_t address = reinterpret_cast<uint64_t>(s.req.data);
        ring_write(ring, size, head + sizeof(h), &address, sizeof address);
      }
      head += wanted;
      s.header_written = true;
      s.pull_seq = ++pulls_sent_[static_cast<size_t>(dst)];
      s.last_progress = coarse_now();
      awaiting_pull_[static_cast<size_t>(dst)].push_back(std::move(s));
      queue.pop_front();
      moved = true;
      continue;
    }
    if (!s.header_written) {
      if (space < sizeof(MessageHeader)) break;
      MessageHeader h{kMessageMagic, static_cast<uint32_t>(s.req.dtype), s.req.tag, s.req.group_id,
                      s.req.nbytes};
      ring_write(ring, size, head, &h, sizeof(h));
      head += sizeof(h);
      space -= sizeof(h);
      s.header_written = true;
      moved = true;
    }
    uint64_t n = std::min(space, s.req.nbytes - s.sent);
    if (n > 0) {
      ring_write(ring, size, head, static_cast<const uint8_t*>(s.req.data) + s.sent, n);
      head += n;
      s.sent += n;
      moved = true;
    }
    if (s.sent < s.req.nbytes) break;  // ring full
    WorkPtr done = std::move(s.req.work);  // moved, not copied: no reference count update
    queue.pop_front();
    ctl.head.store(head, std::memory_order_release);
    complete(*done, nullptr);
  }
  if (moved) {
    ctl.head.store(head, std::memory_order_release);
    if (!queue.empty()) queue.front().last_progress = coarse_now();
    // A sender left waiting (a pulled message, a full ring) needs the receiver to
    // act even if it is between calls (Doorbell).
    const bool waits = !queue.empty() || !awaiting_pull_[static_cast<size_t>(dst)].empty();
    ring_(dst, waits ? Ring::kAwaited : Ring::kBytes);
  }
  return complete_pulled(dst) || moved;
}

void P2PMatcher::on_header(int src, const MessageHeader& h) {
  Incoming& in = incoming_[static_cast<size_t>(src)];
  in.in_payload = true;
  in.remaining = h.nbytes;
  in.target = nullptr;
  in.recv.reset();
  in.unexpected = nullptr;
  auto& posted = posted_[static_cast<size_t>(src)];
  for (auto it = posted.begin(); it != posted.end(); ++it) {
    if (!matches(h, it->req)) continue;
    Recv r = std::move(*it);
    posted.erase(it);
    if (h.nbytes != r.req.nbytes || h.dtype != static_cast<uint32_t>(r.req.dtype)) {
      complete(*r.req.work, size_mismatch(src, h, r.req));  // payload is discarded
    } else {
      in.target = static_cast<uint8_t*>(r.req.data);
      in.recv = std::move(r);
    }
    return;
  }
  // The buffer grows as the payload arrives (append_unexpected), so memory follows
  // the bytes actually sent, never a size a header merely claims.
  auto& list = unexpected_[static_cast<size_t>(src)];
  list.push_back(Unexpected{h, {}, 0, std::nullopt, {}});
  in.unexpected = &list.back();
}

bool P2PMatcher::append_unexpected(int src, const uint8_t* ring, uint64_t pos, uint64_t n) {
  Unexpected& u = *incoming_[static_cast<size_t>(src)].unexpected;
  uint8_t* room = nullptr;
  try {
    room = u.data.extend(n, u.header.nbytes);
  } catch (const std::bad_alloc&) {
    // Cannot hold a message nobody asked for yet: this source is unusable from here.
    break_source(src, "no memory to buffer an unexpected message of " +
                          std::to_string(u.header.nbytes) + " bytes from rank " +
                          std::to_string(src));
    return false;
  }
  ring_read(ring, world_.ring_bytes(), pos, room, n);
  u.received += n;
  return true;
}

bool P2PMatcher::valid_header(const MessageHeader& h, std::string* why) {
  if (h.magic != kMessageMagic && h.magic != kPulledMessageMagic &&
      h.magic != kArenaPulledMessageMagic) {
    *why = "bad header magic";
    return false;
  }
  if (h.dtype >= static_cast<uint32_t>(kNumDTypes)) {
    *why = "unknown dtype code " + std::to_string(h.dtype);
    return false;
  }
  // Element sizes are powers of two (dtype.h): a mask, not a division.
  if ((h.nbytes & (element_size(static_cast<DType>(h.dtype)) - 1)) != 0 ||
      h.nbytes > kMaxMessageBytes) {
    *why = "impossible size " + std::to_string(h.nbytes);
    return false;
  }
  return true;
}

void P2PMatcher::break_source(int src, const std::string& what) {
  source_broken_[static_cast<size_t>(src)] = true;
  auto fail = [&](const RecvRequest& r) {
    complete(*r.work, std::make_exception_ptr(CommError(describe(r) + ": " + what)));
  };
  for (auto& r : posted_[static_cast<size_t>(src)]) fail(r.req);
  posted_[static_cast<size_t>(src)].clear();
  Incoming& in = incoming_[static_cast<size_t>(src)];
  if (in.recv) fail(in.recv->req);
  in.recv.reset();
  for (auto& u : unexpected_[static_cast<size_t>(src)]) {
    if (u.claimant) fail(u.claimant->req);
    undefer(u);
  }
  unexpected_[static_cast<size_t>(src)].clear();
  acknowledge_pulls(src);  // dropped with the rest, as if read: nobody will read them
  in.unexpected = nullptr;
  in.target = nullptr;
  in.in_payload = false;
}

bool P2PMatcher::leave_in_ring(int src, const MessageHeader& h, uint64_t avail) const {
  // Checked in this order so that a corrupt size cannot overflow the sum.
  return h.magic == kMessageMagic && h.nbytes <= world_.ring_bytes() / 4 &&
         avail == sizeof(MessageHeader) + h.nbytes && posted_[static_cast<size_t>(src)].empty();
}

bool P2PMatcher::take_whole_into_first_posted(int src, const MessageHeader& h, const uint8_t* ring,
                                              uint64_t pos, uint64_t avail) {
  auto& posted = posted_[static_cast<size_t>(src)];
  if (posted.empty()) return false;
  Recv& r = posted.front();
  // on_header would pick this receive too (the first posted that matches); the
  // exact header is also a valid one.
  if (h.magic != kMessageMagic || !matches(h, r.req) || h.nbytes != r.req.nbytes ||
      h.dtype != static_cast<uint32_t>(r.req.dtype) || avail < sizeof(MessageHeader) + h.nbytes) {
    return false;
  }
  ring_read(ring, world_.ring_bytes(), pos + sizeof(MessageHeader), r.req.data, h.nbytes);
  const WorkPtr work = std::move(r.req.work);
  posted.pop_front();
  complete(*work, nullptr);
  return true;
}

bool P2PMatcher::advance_incoming(int src) {
  if (source_broken_[static_cast<size_t>(src)]) return false;
  Incoming& in = incoming_[static_cast<size_t>(src)];
  RingControl& ctl = world_.ring_control(src, world_.rank());
  const uint8_t* ring = world_.ring_data(src, world_.rank());
  const uint64_t size = world_.ring_bytes();
  const uint64_t head = ctl.head.load(std::memory_order_acquire);
  uint64_t tail = in.tail;
  bool moved = false;
  int messages = 0;  // taken whole in this call (kMessagesPerPass)
  for (;;) {
    uint64_t avail = head - tail;
    if (!in.in_payload) {
      if (avail < sizeof(MessageHeader)) break;
      MessageHeader h;
      ring_read(ring, size, tail, &h, sizeof(h));
      if (leave_in_ring(src, h, avail)) break;
      if (take_whole_into_first_posted(src, h, ring, tail, avail)) {
        tail += sizeof(h) + h.nbytes;
        moved = true;
        if (++messages == kMessagesPerPass) break;
        continue;
      }
      tail += sizeof(h);
      moved = true;
      std::string why;
      if (!valid_header(h, &why)) {
        // Corrupt stream: nothing after this point can be trusted. The source is cut
        // off for good, and what waits on it fails.
        break_source(src, "p2p stream from rank " + std::to_string(src) + " is corrupt (" + why + ")");
        tail = head;
        break;
      }
      avail -= sizeof(h);
      if (h.magic == kPulledMessageMagic || h.magic == kArenaPulledMessageMagic) {
        const bool in_arena = h.magic == kArenaPulledMessageMagic;
        const uint64_t location_bytes = in_arena ? sizeof(ArenaRef) : sizeof(uint64_t);
        if ((!in_arena && !world_.cma()) || avail < location_bytes) {
          break_source(src, "p2p stream from rank " + std::to_string(src) +
                                " is corrupt (a pulled message without CMA or location)");
          tail = head;
          break;
        }
        PulledFrom from;
        if (in_arena) {
          ring_read(ring, size, tail, &from.arena, sizeof from.arena);
          from.arena.present = 1;
        } else {
          ring_read(ring, size, tail, &from.address, sizeof from.address);
        }
        tail += location_bytes;
        avail -= location_bytes;
        take_pulled(src, h, from);
        if (source_broken_[static_cast<size_t>(src)]) {
          tail = head;
          break;
        }
        if (++messages == kMessagesPerPass) break;
        continue;
      }
      on_header(src, h);
      if (source_broken_[static_cast<size_t>(src)]) {
        tail = head;
        break;
      }
    }
    uint64_t n = std::min(avail, in.remaining);
    if (n > 0) {
      if (in.unexpected != nullptr) {
        if (!append_unexpected(src, ring, tail, n)) {
          tail = head;
          break;
        }
      } else {
        ring_read(ring, size, tail, in.target, n);  // target nullptr: discarded payload
        if (in.target != nullptr) in.target += n;
      }
      tail += n;
      in.remaining -= n;
      moved = true;
      // The receive this data is for, posted or claimed while the message was
      // already arriving as unexpected: its deadline counts from this progress.
      if (in.recv) {
        in.recv->last_progress = coarse_now();
      } else if (in.unexpected != nullptr && in.unexpected->claimant) {
        in.unexpected->claimant->last_progress = coarse_now();
      }
    }
    if (in.remaining > 0) break;
    // Message complete.
    in.in_payload = false;
    if (in.recv) {
      complete(*in.recv->req.work, nullptr);
      in.recv.reset();
    } else if (in.unexpected != nullptr && in.unexpected->claimant) {
      Unexpected* u = in.unexpected;
      deliver_unexpected(*u, *u->claimant);
      auto& list = unexpected_[static_cast<size_t>(src)];
      list.remove_if([u](const Unexpected& x) { return &x == u; });
    }
    in.unexpected = nullptr;
    in.target = nullptr;
    if (++messages == kMessagesPerPass) break;
  }
  if (tail != in.tail) {
    in.tail = tail;
    ctl.tail.store(tail, std::memory_order_release);
    ring_(src, Ring::kBytes);  // the sender may be waiting for space (it drives or is async)
  }
  return moved;
}

std::exception_ptr P2PMatcher::send_stalled(const Send& s, int peer, bool peer_dead,
                                             Clock::time_point now, const char* dead,
                                             const char* silent, const char* hint) const {
  const std::string who = describe(s.req) + ": rank " + std::to_string(peer);
  if (peer_dead) {
    return std::make_exception_ptr(
        CommError(who + " (pid " + std::to_string(world_.pid(peer)) + ") " + dead));
  }
  if (seconds_since(s.last_progress, now) > s.req.timeout_seconds) {
    return std::make_exception_ptr(TimeoutError(who + " " + silent + " " +
                                                format_seconds(s.req.timeout_seconds) + " " + hint));
  }
  return nullptr;
}

bool P2PMatcher::waits_on_receivers() const {
  for (int peer = 0; peer < world_.size(); ++peer) {
    if (sending_to(peer)) return true;
  }
  return false;
}

void P2PMatcher::nudge_receivers() {
  for (int peer = 0; peer < world_.size(); ++peer) {
    if (peer != world_.rank() && sending_to(peer)) ring_(peer, Ring::kNudge);
  }
}

void P2PMatcher::check_stalls(Clock::time_point now, bool check_liveness) {
  const int me = world_.rank();
  for (int peer = 0; peer < world_.size(); ++peer) {
    bool peer_dead = check_liveness && peer != me && !process_alive(world_.pid(peer));
    // Sends: only the head of each queue can be stuck (ring full).
    auto& queue = sends_[static_cast<size_t>(peer)];
    if (!queue.empty()) {
      Send& s = queue.front();
      std::exception_ptr err =
          send_stalled(s, peer, peer_dead, now, "died; the message could not be delivered",
                       "did not receive for", "(is it calling recv?)");
      if (err) {
        if (s.header_written) channel_broken_[static_cast<size_t>(peer)] = true;
        for (auto& q : queue) complete(*q.req.work, err);
        queue.clear();
      }
    }
    // Pulled sends whose data the receiver has not read: it reads every pulled
    // message within kPullGrace of its engine seeing the header, so waiting long
    // means it does not run.
    auto& waiting = awaiting_pull_[static_cast<size_t>(peer)];
    if (!waiting.empty() && !complete_pulled(peer)) {
      std::exception_ptr err =
          send_stalled(waiting.front(), peer, peer_dead, now, "died before reading the message",
                       "did not read the message for", "(is its process stopped?)");
      if (err) {
        // From here on the sender's memory is not guaranteed: a late receiver
        // must not read it.
        world_.ring_control(me, peer).pulls_cancelled.store(waiting.back().pull_seq,
                                                            std::memory_order_release);
        for (auto& q : waiting) complete(*q.req.work, err);
        waiting.clear();
      }
    }
    // Receives waiting for a message (posted, claimed unexpected, or mid-stream).
    RingControl& ctl = world_.ring_control(peer, me);
    bool data_left =
        ctl.head.load(std::memory_order_acquire) != incoming_[static_cast<size_t>(peer)].tail;
    auto stalled = [&](const Recv& r) -> std::exception_ptr {
      if (peer_dead && !data_left) {
        return std::make_exception_ptr(
            CommError(describe(r.req) + ": rank " + std::to_string(peer) + " (pid " +
                      std::to_string(world_.pid(peer)) + ") died before sending the message"));
      }
      if (seconds_since(r.last_progress, now) > r.req.timeout_seconds) {
        return std::make_exception_ptr(
            TimeoutError(describe(r.req) + ": no message from rank " + std::to_string(peer) +
                         " within " + format_seconds(r.req.timeout_seconds) +
                         " (is it calling send with the same group and tag?)"));
      }
      return nullptr;
    };
    auto& posted = posted_[static_cast<size_t>(peer)];
    for (auto it = posted.begin(); it != posted.end();) {
      if (auto err = stalled(*it)) {
        complete(*it->req.work, err);
        it = posted.erase(it);
      } else {
        ++it;
      }
    }
    Incoming& in = incoming_[static_cast<size_t>(peer)];
    if (in.recv) {
      if (auto err = stalled(*in.recv)) {
        complete(*in.recv->req.work, err);
        in.recv.reset();
        in.target = nullptr;  // discard the rest of this message
      }
    }
    for (auto& u : unexpected_[static_cast<size_t>(peer)]) {
      if (u.claimant) {
        if (auto err = stalled(*u.claimant)) {
          complete(*u.claimant->req.work, err);
          u.claimant.reset();
        }
      }
    }
  }
}

bool P2PMatcher::idle() const {
  for (size_t i = 0; i < sends_.size(); ++i) {
    if (!sends_[i].empty() || !awaiting_pull_[i].empty() || !posted_[i].empty() ||
        incoming_[i].recv) {
      return false;
    }
    for (const auto& u : unexpected_[i]) {
      if (u.claimant) return false;
    }
  }
  return true;
}

}  // namespace collie::detail
