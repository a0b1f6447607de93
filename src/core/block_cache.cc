#include "core/block_cache.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/small_pool.h"

namespace collie::detail {
namespace {

constexpr size_t kAlignment = 64;

// Coarse rounding so that tensors of nearly the same size share blocks.
size_t rounded(size_t bytes) {
  const size_t step = bytes < (2u << 20) ? (64u << 10) : (2u << 20);
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
    auto it = c.free_blocks.find(*capacity);
    if (it != c.free_blocks.end()) {
      void* block = it->second;
      c.free_blocks.erase(it);
      c.cached_bytes -= *capacity;
      return block;
    }
  }
  return std::aligned_alloc(kAlignment, *capacity);
}

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
