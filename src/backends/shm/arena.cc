#include "backends/shm/arena.h"

#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <new>

#include "backends/shm/layout.h"
#include "collie/errors.h"
#include "runtime/env.h"

namespace collie::detail {
namespace {

constexpr size_t kPage = 4096;
// A chunk holds at least this much; bigger requests get a chunk of their own size.
constexpr size_t kDefaultChunkBytes = 64u << 20;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

struct SharedArena::Chunk {
  std::mutex mu;
  Segment segment;
  uint32_t id = 0;
  std::map<size_t, size_t> free;  // offset -> length, coalesced
  // Freed one-page blocks (every small tensor's, and the output of every small
  // call on shared tensors), reused first: a map insertion and removal with
  // coalescing cost more than the rest of such a call's allocation.
  std::vector<size_t> free_pages;
  static constexpr size_t kMaxFreePages = 256;

  uint8_t* base() const { return static_cast<uint8_t*>(segment.data()); }

  // First fit; the caller holds mu.
  std::optional<size_t> take(size_t len) {
    if (len == kPage && !free_pages.empty()) {
      const size_t offset = free_pages.back();
      free_pages.pop_back();
      return offset;
    }
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < len) continue;
      size_t offset = it->first;
      size_t left = it->second - len;
      free.erase(it);
      if (left > 0) free.emplace(offset + len, left);
      return offset;
    }
    return std::nullopt;
  }

  void give_back(size_t offset, size_t len) {
    std::lock_guard<std::mutex> lock(mu);
    if (len == kPage && free_pages.size() < kMaxFreePages) {
      free_pages.push_back(offset);
      return;
    }
    coalesce(offset, len);
  }

  // Returns the kept pages to the map, so that they merge into larger ranges
  // again; the caller holds mu.
  void release_free_pages() {
    for (size_t offset : free_pages) coalesce(offset, kPage);
    free_pages.clear();
  }

 private:
  void coalesce(size_t offset, size_t len) {
    auto next = free.lower_bound(offset);
    if (next != free.end() && offset + len == next->first) {
      len += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += len;
        return;
      }
    }
    free.emplace(offset, len);
  }
};

// A block handed out, as its deleter knows it.
struct SharedArena::Block {
  std::shared_ptr<Chunk> chunk;  // keeps the chunk mapped while the block lives
  size_t at = 0;                 // offset in the chunk's segment
  size_t len = 0;
  uint64_t generation = 0;  // the arena's when the block was carved
};

// Freed one-page blocks kept by the thread that freed them (a small call's
// output dies on the thread that asked for it), which allocate() hands out
// again without taking a lock or making a record. Trivially destructible, so
// a block freed during the thread's teardown, after Teardown flushed it, still
// reads it (torn_down) and goes straight to its chunk.
struct SharedArena::PageCache {
  static constexpr unsigned kPages = 32;  // 128 KiB of arena per thread at most
  Block* blocks[kPages];
  unsigned count;
  bool armed;  // Teardown is registered for this thread
  bool torn_down;

  struct Teardown {
    ~Teardown() {
      PageCache& cache = page_cache();
      cache.torn_down = true;
      cache.flush();
    }
  };
  void arm() {
    thread_local Teardown teardown;
    (void)teardown;
    armed = true;
  }
  // Gives every kept block back to its chunk.
  void flush() {
    while (count > 0) return_to_chunk(blocks[--count]);
  }
};

SharedArena::PageCache& SharedArena::page_cache() {
  thread_local PageCache cache{};
  return cache;
}

void SharedArena::return_to_chunk(Block* block) {
  block->chunk->give_back(block->at, block->len);
  delete block;
}

SharedArena& SharedArena::instance() {
  // Never destroyed: blocks may be freed during static destruction (a tensor held
  // by a Python object, say) and must still find their chunk's bookkeeping.
  static SharedArena* arena = new SharedArena();
  return *arena;
}

std::string SharedArena::chunk_name(const std::string& job_id, int world_rank, uint32_t chunk) {
  return segment_prefix(job_id) + "arena" + std::to_string(chunk) + "-" +
         std::to_string(world_rank);
}

void SharedArena::configure(const std::string& job_id, int world_rank) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : chunks_) Segment::unlink(c->segment.name());  // not shut down before
  job_id_ = job_id;
  world_rank_ = world_rank;
  forget_chunks();
  serving_.store(true, std::memory_order_release);
}

void SharedArena::shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!serving_.load(std::memory_order_relaxed)) return;  // written under mu_
  for (const auto& c : chunks_) Segment::unlink(c->segment.name());
  forget_chunks();
  serving_.store(false, std::memory_order_release);
}

void SharedArena::forget_chunks() {
  chunks_.clear();
  has_chunks_.store(false, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  // The calling thread's kept pages would hold their chunks mapped until it next
  // allocates one; other threads' go back when they do (or exit).
  page_cache().flush();
}

void SharedArena::unlink_names() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : chunks_) Segment::unlink(c->segment.name());
}

std::shared_ptr<SharedArena::Chunk> SharedArena::new_chunk(size_t min_bytes) {
  const size_t usable = std::max(round_up(min_bytes, kPage),
                                 round_up(env_bytes("COLLIE_SHARED_CHUNK_BYTES", kDefaultChunkBytes), kPage));
  auto chunk = std::make_shared<Chunk>();
  chunk->id = static_cast<uint32_t>(chunks_.size());
  const std::string name = chunk_name(job_id_, world_rank_, chunk->id);
  if (!Segment::create(name, kHeaderBytes + usable, &chunk->segment)) {
    throw CommError("shared arena: '" + name +
                    "' already exists (another job with the same COLLIE_JOB_ID?)");
  }
  auto* header = new (chunk->segment.data()) SegmentHeader();
  header->pid = getpid();
  header->world_rank = world_rank_;
  header->magic.store(kSegmentMagic, std::memory_order_release);
  chunk->free.emplace(kHeaderBytes, usable);
  // A program that exits without release() must not leave the names behind
  // (release() unlinks them; this covers return from main and exit()).
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit([] { SharedArena::instance().unlink_names(); }); });
  chunks_.push_back(chunk);
  has_chunks_.store(true, std::memory_order_release);
  return chunk;
}

std::pair<void*, std::function<void(void*)>> SharedArena::hand_out(Block* block) {
  // One pointer: std::function keeps it inline (no allocation per block).
  return {block->chunk->base() + block->at,
          [block](void*) { SharedArena::instance().free_block(block); }};
}

void SharedArena::free_block(Block* block) {
  PageCache& cache = page_cache();
  if (block->len == kPage && !cache.torn_down && cache.count < PageCache::kPages &&
      block->generation == generation_.load(std::memory_order_acquire)) {
    if (!cache.armed) cache.arm();
    cache.blocks[cache.count++] = block;
    return;
  }
  return_to_chunk(block);
}

std::pair<void*, std::function<void(void*)>> SharedArena::allocate(size_t nbytes) {
  const size_t len = round_up(std::max<size_t>(nbytes, 1), kPage);
  if (len == kPage) {
    PageCache& cache = page_cache();
    const uint64_t generation = generation_.load(std::memory_order_acquire);
    while (cache.count > 0) {
      Block* block = cache.blocks[--cache.count];
      if (block->generation == generation) return hand_out(block);
      return_to_chunk(block);  // carved before the arena was reconfigured
    }
  }
  auto block = std::make_unique<Block>();  // before a range is taken, which it must return
  std::lock_guard<std::mutex> lock(mu_);
  if (!serving_.load(std::memory_order_relaxed)) {  // written under mu_, held here
    throw RuntimeError(
        "empty_shared: the shared arena is not available; call init() first (it exists on the "
        "shm backend)");
  }
  std::shared_ptr<Chunk> chunk;
  std::optional<size_t> offset;
  for (const auto& c : chunks_) {
    std::lock_guard<std::mutex> chunk_lock(c->mu);
    if ((offset = c->take(len))) {
      chunk = c;
      break;
    }
  }
  // Before growing, let the kept single pages (this thread's too) merge into
  // larger free ranges.
  if (!chunk && len > kPage) page_cache().flush();
  for (auto it = chunks_.begin(); !chunk && len > kPage && it != chunks_.end(); ++it) {
    std::lock_guard<std::mutex> chunk_lock((*it)->mu);
    if ((*it)->free_pages.empty()) continue;
    (*it)->release_free_pages();
    if ((offset = (*it)->take(len))) chunk = *it;
  }
  if (!chunk) {
    chunk = new_chunk(len);
    std::lock_guard<std::mutex> chunk_lock(chunk->mu);
    offset = chunk->take(len);
  }
  *block = Block{std::move(chunk), *offset, len, generation_.load(std::memory_order_relaxed)};
  return hand_out(block.release());
}

ArenaRef SharedArena::locate(const void* p, size_t nbytes) const {
  if (!has_chunks_.load(std::memory_order_acquire)) return ArenaRef{};
  const auto* b = static_cast<const uint8_t*>(p);
  // The chunk this thread found last, valid while no chunk was forgotten since:
  // every collective asks about its input, and its tensors are mostly in one chunk.
  struct LastFound {
    uint64_t generation;
    const uint8_t* base;
    const uint8_t* end;
    uint32_t id;
  };
  thread_local LastFound last{};
  if (last.generation == generation_.load(std::memory_order_acquire) &&
      b >= last.base + kHeaderBytes && b + nbytes <= last.end) {
    return ArenaRef{last.id, 1, static_cast<uint64_t>(b - last.base)};
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : chunks_) {
    const uint8_t* base = c->base();
    if (b >= base + kHeaderBytes && b + nbytes <= base + c->segment.size()) {
      last = {generation_.load(std::memory_order_relaxed), base, base + c->segment.size(), c->id};
      return ArenaRef{c->id, 1, static_cast<uint64_t>(b - base)};
    }
  }
  return ArenaRef{};
}

uint8_t* PeerArenas::resolve(int owner, const ArenaRef& ref, size_t nbytes) {
  auto key = std::make_pair(owner, ref.chunk);
  auto it = mapped_.find(key);
  if (it == mapped_.end()) {
    const std::string name = SharedArena::chunk_name(job_id_, owner, ref.chunk);
    Segment seg;
    if (!Segment::open(name, &seg)) {
      throw CommError("shared arena chunk " + std::to_string(ref.chunk) + " of rank " +
                      std::to_string(owner) + " ('" + name + "') does not exist");
    }
    const auto* header = static_cast<const SegmentHeader*>(seg.data());
    if (seg.size() < SharedArena::kHeaderBytes ||
        header->magic.load(std::memory_order_acquire) != kSegmentMagic ||
        header->world_rank != owner) {
      throw CommError("shared arena chunk '" + name + "' is not rank " + std::to_string(owner) +
                      "'s");
    }
    it = mapped_.emplace(key, std::move(seg)).first;
  }
  const Segment& seg = it->second;
  if (ref.offset < SharedArena::kHeaderBytes || ref.offset > seg.size() ||
      nbytes > seg.size() - ref.offset) {
    throw CommError("rank " + std::to_string(owner) + " named bytes [" +
                    std::to_string(ref.offset) + ", +" + std::to_string(nbytes) +
                    ") of its shared arena chunk " + std::to_string(ref.chunk) + ", which holds " +
                    std::to_string(seg.size()));
  }
  return static_cast<uint8_t*>(seg.data()) + ref.offset;
}

}  // namespace collie::detail
