#include "core/block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>

#include "core/small_pool.h"

namespace collie::detail {
namespace {

constexpr size_t kAlignment = 64;

// Blocks of at least a huge page ask for transparent huge pages (where the
// kernel's THP mode is `madvise`, Debian's, nothing else gets them): a 64 MiB
// tensor is 32 TLB entries instead of 16,384, and a copy streaming through it
// stops walking page tables every 4 KiB. 2 ranks, Intel Xeon: all_reduce of
// 8 MiB 0.84-0.95 -> 0.63-0.68 ms, send_recv of 64 MiB 12.3-13.8 -> 9.7 ms,
// all_to_all 9.6-10.0 -> 7.2-7.6 ms. numpy marks its large arrays the same way.
// COLLIE_HUGE_PAGES=0 turns it off.
constexpr size_t kHugePageBytes = 2u << 20;

bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* v = std::getenv("COLLIE_HUGE_PAGES");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return wanted;
}

// Coarse rounding so that tensors of nearly the same size share blocks.
size_t rounded(size_t bytes) {
  const size_t step = bytes < kHugePageBytes ? (64u << 10) : kHugePageBytes;
  return (bytes + step - 1) / step * step;
}

size_t cache_limit() {
  static const size_t limit = [] {
    const char* v = std::getenv("COLLIE_ALLOC_CACHE_BYTES");
    if (v == nullptr || *v == '\0') return static_cast<size_t>(512) << 20;
    return static_cast<size_t>(std::strtoull(v, nullptr, 10));
  }();
  return limit;
}

struct Cache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // capacity -> block
  size_t cached_bytes = 0;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: storages may die during static teardown
  return *c;
}

// Blocks up to kPoolMaxBytes come from the per-thread pool (small_pool.h). Other
// small blocks come from malloc, over-allocated by the alignment and aligned by
// hand, the original pointer stored just below the block: malloc serves them from
// its per-thread cache, where aligned_alloc always takes its slow path.
void* small_alloc(size_t capacity) {
  if (capacity <= kPoolMaxBytes) return pool_alloc(capacity);
  void* raw = std::malloc(capacity + kAlignment);
  if (raw == nullptr) return nullptr;
  // malloc returns at least 16-byte aligned memory, so there are always at least
  // 16 bytes below the aligned block for the original pointer.
  auto addr = (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~(kAlignment - 1);
  reinterpret_cast<void**>(addr)[-1] = raw;
  return reinterpret_cast<void*>(addr);
}

void small_free(void* block, size_t capacity) {
  if (capacity <= kPoolMaxBytes) return pool_free(block, capacity);
  std::free(static_cast<void**>(block)[-1]);
}

}  // namespace

void* cached_alloc(size_t bytes, size_t* capacity) {
  // cached_free tells the kinds apart by capacity alone.
  const size_t small = std::max<size_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  if (small < kBlockCacheMinBytes) {
    *capacity = small;
    return small_alloc(small);
  }
  *capacity = rounded(bytes);
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    // The block of this size freed last (equal keys keep their insertion
    // order): its lines are the likeliest still in the caches. Taking the
    // oldest made two cached blocks of one size take turns: a loop whose
    // output is freed before the next call's is made then wrote to each every
    // other call, twice the memory, where the newest is the same block every
    // time. It happened whenever a message of that size was once buffered (2
    // ranks, send_recv of 8 MiB, one launch in two: 328-600 against 267-309 us).
    auto it = c.free_blocks.upper_bound(*capacity);
    if (it != c.free_blocks.begin() && (--it)->first == *capacity) {
      void* block = it->second;
      c.free_blocks.erase(it);
      c.cached_bytes -= *capacity;
      return block;
    }
  }
  if (*capacity >= kHugePageBytes && huge_pages_wanted()) {
    // Capacities this large are multiples of the huge page (rounded()).
    void* block = std::aligned_alloc(kHugePageBytes, *capacity);
    if (block != nullptr) madvise(block, *capacity, MADV_HUGEPAGE);  // advice: may be ignored
    return block;
  }
  return std::aligned_alloc(kAlignment, *capacity);
}

bool large_blocks_ask_for_huge_pages() { return huge_pages_wanted(); }

void cached_free(void* block, size_t capacity) {
  if (block == nullptr) return;
  if (capacity < kBlockCacheMinBytes) return small_free(block, capacity);
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.cached_bytes + capacity <= cache_limit()) {
      c.free_blocks.emplace(capacity, block);
      c.cached_bytes += capacity;
      return;
    }
  }
  std::free(block);
}

}  // namespace collie::detail
