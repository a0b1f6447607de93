#include "core/block_cache.h"

#include <cstdlib>
#include <map>
#include <mutex>

namespace collie::detail {
namespace {

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

}  // namespace

void* cached_alloc(size_t bytes, size_t* capacity) {
  if (bytes < kBlockCacheMinBytes) {
    *capacity = (bytes + 63) / 64 * 64;
    return std::aligned_alloc(64, *capacity == 0 ? 64 : *capacity);
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
  return std::aligned_alloc(64, *capacity);
}

void cached_free(void* block, size_t capacity) {
  if (block == nullptr) return;
  if (capacity >= kBlockCacheMinBytes) {
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
