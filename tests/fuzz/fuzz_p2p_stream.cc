// libFuzzer target: the point-to-point byte stream a receiver parses
// (src/backends/shm/p2p.cc: message headers, payloads, matching against posted
// receives, the unexpected-message buffer, stall handling). The stream is what a
// peer process wrote into shared memory, so it is external input: whatever its
// bytes, the receiver must complete or fail its receives and never crash.
//
// A real one-rank world (ShmGroup with rings, in /dev/shm) is created once; each
// input resets the rank's ring to itself and streams into it, as a peer would,
// while a fresh P2PMatcher drains it.
//
// Input: byte 0 = number of receives posted before the stream (low 2 bits) and
// after it (next 2 bits); then 4 bytes per receive (tag, size in 16-byte units,
// dtype, group: even = the group the stream uses); then records that build the
// stream: an even byte starts a message (dtype, tag, group, 5-byte declared size
// up to 1 TiB, then at most 8 KiB of payload from the input, so large messages
// are cut short), an odd byte raw bytes (1-byte length, the bytes): garbage,
// misaligned headers, stray magic words. Headers are validated and an unexpected
// message's buffer grows only with the bytes that arrive, so no declared size can
// make the receiver allocate more than the stream holds. Start bytes of 2 mod 4
// make pulled messages (p2p.h; the one-rank world agrees on CMA with itself):
// the receiver reads its own memory at the address the stream names, a real
// buffer or an unmapped one; an unreadable one fails only that message, and an
// unexpected message's buffer grows in doubling pieces as reads succeed.
// Start bytes of 6 mod 8 make arena-pulled messages instead: the payload is
// named by chunk and offset in the rank's shared arena, which holds one real
// block; the location is inside that block or anything at all (a chunk that
// does not exist, an offset or size past the chunk), which fails only that
// message.
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>

#include "backends/shm/arena.h"
#include "backends/shm/p2p.h"
#include "backends/shm/shm_group.h"
#include "runtime/work.h"
#include "self_world.h"

namespace {

using collie::detail::P2PMatcher;
using collie::detail::RecvRequest;
using collie::detail::Ring;
using collie::detail::ShmGroup;

constexpr uint64_t kGroupId = 0x5eed;
constexpr size_t kRingBytes = 4096;

ShmGroup& world() {
  // Kept for the whole run; its name is already unlinked.
  static ShmGroup* g =
      new ShmGroup(collie::detail::self_world_config("fuzz", kGroupId, kRingBytes, 1));
  return *g;
}

// The rank's shared arena, serving the world's job, and where its one block
// lies: arena-pulled messages read from there (through PeerArenas, as from a
// peer's arena).
struct ArenaBlock {
  collie::detail::ArenaRef ref;
  size_t nbytes = 0;
};
const ArenaBlock& arena_block() {
  static const ArenaBlock block = [] {
    auto& arena = collie::detail::SharedArena::instance();
    arena.configure(world().config().job_id, 0);
    const size_t nbytes = 1 << 16;
    auto [data, free_block] = arena.allocate(nbytes);
    // Never called: the block is kept for the whole run (its record, reachable
    // from here, is no leak).
    static auto* keep = new std::function<void(void*)>(std::move(free_block));
    (void)keep;
    std::memset(data, 0x5a, nbytes);
    return ArenaBlock{arena.locate(data, nbytes), nbytes};
  }();
  return block;
}

collie::detail::PeerArenas& peer_arenas() {
  static auto* arenas = new collie::detail::PeerArenas(world().config().job_id);
  return *arenas;
}

struct Posted {
  std::vector<uint8_t> buffer;
  RecvRequest request;
};

std::unique_ptr<Posted> make_recv(const uint8_t* p) {
  auto r = std::make_unique<Posted>();
  collie::detail::OpInfo info;
  info.kind = collie::detail::OpKind::Recv;
  r->buffer.resize(static_cast<size_t>(p[1]) * 16);
  r->request.work = std::make_shared<collie::Work>(info);
  r->request.src = 0;
  r->request.group_id = (p[3] % 2 == 0) ? kGroupId : kGroupId + p[3];
  r->request.tag = p[0];
  r->request.data = r->buffer.data();
  r->request.nbytes = r->buffer.size();
  r->request.dtype = static_cast<collie::DType>(p[2] % collie::kNumDTypes);
  r->request.timeout_seconds = 1;
  return r;
}

std::vector<uint8_t> build_stream(const uint8_t* p, size_t n) {
  std::vector<uint8_t> out;
  auto take = [&](size_t k) {
    size_t got = std::min(k, n);
    const uint8_t* from = p;
    p += got;
    n -= got;
    return std::vector<uint8_t>(from, from + got);
  };
  while (n > 0 && out.size() < (1u << 16)) {
    const uint8_t kind = take(1)[0];
    if (kind % 2 == 0) {
      auto f = take(8);
      f.resize(8, 0);
      collie::detail::MessageHeader h{};
      h.magic = collie::detail::kMessageMagic;
      h.dtype = f[0] % 12;  // 10, 11: not a dtype
      h.tag = f[1];
      h.group_id = f[2] % 2 == 0 ? kGroupId : kGroupId + f[2];
      h.nbytes = 0;
      for (int b = 0; b < 5; ++b) h.nbytes |= static_cast<uint64_t>(f[3 + b]) << (8 * b);
      if (kind % 8 == 6) {
        // An arena-pulled message: the header, then the payload's chunk and
        // offset. Even first byte: inside the arena's block (the size kept
        // within it); odd: chunk, offset and size as the input says.
        h.magic = collie::detail::kArenaPulledMessageMagic;
        auto a = take(13);
        a.resize(13, 0);
        collie::detail::ArenaRef ref;
        if (a[0] % 2 == 0) {
          const ArenaBlock& block = arena_block();
          const uint64_t at = a[1] * 64u;
          ref = block.ref;
          ref.offset += at;
          h.nbytes = std::min<uint64_t>(h.nbytes, block.nbytes - at);
        } else {
          std::memcpy(&ref.chunk, a.data() + 1, 4);
          ref.chunk %= 4;  // chunk 0 exists, 1-3 do not
          std::memcpy(&ref.offset, a.data() + 5, 8);
        }
        ref.present = 0;  // not trusted: the receiver sets it
        const auto* hb = reinterpret_cast<const uint8_t*>(&h);
        out.insert(out.end(), hb, hb + sizeof h);
        const auto* rb = reinterpret_cast<const uint8_t*>(&ref);
        out.insert(out.end(), rb, rb + sizeof ref);
        continue;
      }
      if (kind % 4 == 2) {
        // A pulled message: the header, then where the payload is. Even address
        // byte: inside a real buffer of this process (the read succeeds; the size
        // is kept within it); odd: an address below 64 KiB (never mapped, so the
        // read fails, whatever size the header claims). Not any address: one in
        // a large mapped region (ASan's shadow) would be read, as it should, into
        // gigabytes of buffer, past the fuzzer's memory limit.
        h.magic = collie::detail::kPulledMessageMagic;
        auto a = take(9);
        a.resize(9, 0);
        uint64_t address = 0;
        if (a[0] % 2 == 0) {
          static uint8_t source[1 << 16];
          const uint64_t at = a[1] * 64u;
          h.nbytes = std::min<uint64_t>(h.nbytes, sizeof source - at);
          address = reinterpret_cast<uint64_t>(source + at);
        } else {
          std::memcpy(&address, a.data() + 1, 8);
          address &= 0xffff;
        }
        const auto* hb = reinterpret_cast<const uint8_t*>(&h);
        out.insert(out.end(), hb, hb + sizeof h);
        const auto* ab = reinterpret_cast<const uint8_t*>(&address);
        out.insert(out.end(), ab, ab + sizeof address);
        continue;
      }
      const auto* hb = reinterpret_cast<const uint8_t*>(&h);
      out.insert(out.end(), hb, hb + sizeof h);
      auto payload = take(std::min<uint64_t>(h.nbytes, 8192));
      out.insert(out.end(), payload.begin(), payload.end());
    } else {
      auto len = take(1);
      auto raw = take(len.empty() ? 0 : len[0]);
      out.insert(out.end(), raw.begin(), raw.end());
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t before = data[0] & 3, after = (data[0] >> 2) & 3;
  if (size < 1 + 4 * (before + after)) return 0;
  const uint8_t* specs = data + 1;
  const uint8_t* rest = specs + 4 * (before + after);
  const std::vector<uint8_t> stream = build_stream(rest, size - static_cast<size_t>(rest - data));

  ShmGroup& g = world();
  auto& ctl = g.ring_control(0, 0);
  uint8_t* ring = g.ring_data(0, 0);
  ctl.head.store(0);
  ctl.tail.store(0);
  P2PMatcher matcher(
      g, peer_arenas(), [](int, Ring) {}, [](bool) {});
  std::vector<std::unique_ptr<Posted>> posted;
  for (size_t i = 0; i < before; ++i) {
    posted.push_back(make_recv(specs + 4 * i));
    matcher.add_recv(posted.back()->request);
  }
  // Stream in as much as the ring has room for, drain, repeat: the receiver sees
  // the bytes in pieces of every size, wrapping around the ring.
  uint64_t head = 0;
  size_t off = 0;
  for (int round = 0; round < 100000; ++round) {
    const uint64_t space = kRingBytes - (head - ctl.tail.load());
    const size_t n = std::min<size_t>(space, stream.size() - off);
    for (size_t k = 0; k < n; ++k) ring[(head + k) % kRingBytes] = stream[off + k];
    head += n;
    off += n;
    ctl.head.store(head, std::memory_order_release);
    const bool moved = matcher.advance(P2PMatcher::Runner::progress_thread());
    if (!moved && (off == stream.size() || n == 0)) break;
  }
  for (size_t i = 0; i < after; ++i) {
    posted.push_back(make_recv(specs + 4 * (before + i)));
    matcher.add_recv(posted.back()->request);
  }
  matcher.advance(P2PMatcher::Runner::progress_thread());
  // Everything still waiting fails with its deadline long past.
  matcher.check_stalls(std::chrono::steady_clock::now() + std::chrono::hours(1), false);
  for (const auto& p : posted) {
    if (!p->request.work->is_completed()) {
      std::fprintf(stderr, "fuzz invariant broken: a receive neither completed nor failed\n");
      std::abort();
    }
  }
  return 0;
}
