// Per-thread free lists for the small objects that every call makes and drops.
//
// A blocking 8-byte all_reduce allocates four small objects — its Work, the
// backend's operation state, the output's Storage and the output's data block —
// and frees them again before it returns. A glibc malloc/free pair costs about
// 140 instructions; popping and pushing a per-thread list costs about 15, which
// made the four pairs a sixth of the call's instructions. So these objects come
// from here:
//   - sizes up to kPoolMaxBytes are rounded up to a power of two (at least 64)
//     and served from this thread's list of that size, refilled from operator
//     new; every block is 64-byte aligned. Up to 8 KiB because the data of a
//     small collective's output comes from here too, and glibc serves blocks
//     over 1 KiB from its bins, not its per-thread cache (2 ranks, all_reduce
//     of 2 KiB: the output's malloc and free were 347 of 4,019 instructions);
//   - a freed block goes to the freeing thread's list (so a block made on one
//     thread and dropped on another — an async op finished by the progress
//     thread — is reused there), up to kPoolBlocksPerClass per list (fewer of
//     the blocks over 1 KiB: kPoolBytesPerClass at most); the rest,
//     and everything freed after the thread's lists were torn down, goes back
//     to operator delete;
//   - larger sizes go straight to operator new / delete.
// Under AddressSanitizer the pool is bypassed so that use-after-free on these
// objects is still caught.
//
// Example:
//   auto work = std::allocate_shared<Work>(PoolAllocator<Work>{}, info);
//   struct MyOp { static void* operator new(size_t n) { return pool_alloc(n); }
//                 static void operator delete(void* p, size_t n) { pool_free(p, n); } };
#pragma once

#include <cstddef>

namespace collie::detail {

inline constexpr size_t kPoolAlignment = 64;
inline constexpr size_t kPoolMaxBytes = 8192;
inline constexpr unsigned kPoolBlocksPerClass = 64;
inline constexpr size_t kPoolBytesPerClass = 64 << 10;

// 64-byte aligned memory for `bytes` (std::bad_alloc when out of memory).
void* pool_alloc(size_t bytes);
// Gives back a block from pool_alloc(`bytes`) (the same `bytes`).
void pool_free(void* block, size_t bytes) noexcept;
// How many free blocks this thread keeps for blocks of `bytes` (tests; 0 past
// kPoolMaxBytes and once the thread's pool was torn down).
size_t pool_blocks_kept(size_t bytes) noexcept;

// A std allocator over the pool, for std::allocate_shared.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(pool_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool_free(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace collie::detail
