// The shared arena: tensor memory that every rank of the job can map, so that a
// collective on it reads its peers' inputs and writes their outputs in place
// instead of staging every byte through the step slots (direct_ops.h).
//
// Owner side (SharedArena, one per process): memory comes in chunks, each a
// shared-memory segment "/collie-<uid>-<job>-arena<k>-<world rank>" that starts
// with a SegmentHeader (owner pid, so the launcher's stale sweep can judge it)
// followed by the blocks. Blocks are page-aligned, first-fit, coalesced on free
// (freed one-page blocks are kept aside for reuse, and merged back before the
// arena grows), and chunks stay until release(): like a caching allocator,
// repeated collectives reuse the same pages (already mapped by every peer).
// Every small call on shared tensors allocates its output here and frees it
// soon after, so the thread that frees a one-page block keeps it (PageCache in
// arena.cc) and hands it out again without a lock or a record, and locate()
// remembers per thread the chunk it found last (2 ranks, all_reduce of 8 B on
// shared tensors: 3,094 -> 2,647 instructions per call, ordinary ones 2,300). A
// chunk's name stays linked until release() because peers map it lazily, the
// first time a collective names it; `collie run` removes the names of a rank
// that died.
//
// Peer side (PeerArenas, used by the progress engine only): maps peers' chunks on
// first use and keeps them mapped until the engine goes away.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/shm/segment.h"

namespace collie::detail {

// Where a byte range lives in its owner's arena.
struct ArenaRef {
  uint32_t chunk = 0;
  uint32_t present = 0;  // 1 when the range is in the arena
  uint64_t offset = 0;   // from the start of the chunk's segment
};

class SharedArena {
 public:
  // The process's arena (allocation fails until configure() ran).
  static SharedArena& instance();

  // Starts serving allocations for `world_rank` of job `job_id`; called when the
  // shm transport starts. Chunks of an earlier configuration are unlinked and
  // forgotten (their blocks stay valid).
  void configure(const std::string& job_id, int world_rank);
  // Unlinks every chunk's name and refuses further allocations. Blocks still in
  // use stay valid (their chunk stays mapped until the last one is freed).
  void shutdown();
  // Unlinks every chunk's name but keeps serving them (registered with atexit).
  void unlink_names();

  // A block of at least `nbytes` (page-aligned) and the function that frees it.
  // CommError when /dev/shm has no room (naming needed vs free bytes).
  std::pair<void*, std::function<void(void*)>> allocate(size_t nbytes);

  // Where [p, p + nbytes) is, if it lies inside one of this rank's chunks.
  ArenaRef locate(const void* p, size_t nbytes) const;
  // False while no chunk exists: then nothing is shared (one atomic load).
  bool in_use() const { return has_chunks_.load(std::memory_order_acquire); }
  // Whether allocate() serves blocks: between configure() and shutdown().
  bool serving() const { return serving_.load(std::memory_order_acquire); }

  // Chunk segment name for `world_rank`'s chunk `chunk` of job `job_id`.
  static std::string chunk_name(const std::string& job_id, int world_rank, uint32_t chunk);
  // Bytes at the start of every chunk reserved for its header.
  static constexpr size_t kHeaderBytes = 4096;

 private:
  struct Chunk;
  struct Block;
  struct PageCache;
  static PageCache& page_cache();
  static void return_to_chunk(Block* block);
  mutable std::mutex mu_;
  std::string job_id_;
  int world_rank_ = -1;
  // Between configure() and shutdown(). Written under mu_; an atomic so that
  // serving() reads it without the lock.
  std::atomic<bool> serving_{false};
  std::atomic<bool> has_chunks_{false};  // lets locate() skip the lock when empty
  // Bumped whenever chunks are forgotten (configure, shutdown): what a thread
  // remembers of an earlier generation (cached pages, the last chunk found) is
  // no longer this arena's.
  std::atomic<uint64_t> generation_{1};
  std::vector<std::shared_ptr<Chunk>> chunks_;

  std::shared_ptr<Chunk> new_chunk(size_t min_bytes);
  void forget_chunks();  // the caller holds mu_
  std::pair<void*, std::function<void(void*)>> hand_out(Block* block);
  void free_block(Block* block);
};

// Peers' chunks, mapped on demand. Not thread-safe: the engine's progress lock
// serialises every user.
class PeerArenas {
 public:
  explicit PeerArenas(std::string job_id) : job_id_(std::move(job_id)) {}

  // The address of `ref` (nbytes long) in world rank `owner`'s arena. CommError
  // when the chunk does not exist or the range does not fit in it.
  uint8_t* resolve(int owner, const ArenaRef& ref, size_t nbytes);

 private:
  std::string job_id_;
  std::map<std::pair<int, uint32_t>, Segment> mapped_;
};

}  // namespace collie::detail
