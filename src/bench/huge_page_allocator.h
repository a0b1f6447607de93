// HugePageAllocator: what the OpenMPI bench worker's buffers are allocated with.
//
// collie asks for transparent huge pages for its own tensors of 2 MiB or more
// (core/block_cache.cc), as numpy does for its large arrays; on kernels whose
// THP mode is `madvise` (Debian's) only memory so marked gets them. The OpenMPI
// side's buffers are marked the same way, so the comparison is of the
// libraries, not of their page sizes.
//
// Example:
//   std::vector<unsigned char, HugePageAllocator<unsigned char>> buf(64 << 20);
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace collie::bench {

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return std::allocator<T>().allocate(n);
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (p == nullptr) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // advice: failing it only costs speed
    return static_cast<T*>(p);
  }

  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePage) return std::allocator<T>().deallocate(p, n);
    std::free(p);
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace collie::bench
