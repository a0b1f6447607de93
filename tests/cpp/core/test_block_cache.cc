// The block cache (core/block_cache.h): rounding, alignment, reuse of freed
// blocks, and the transparent-huge-page advice on blocks of 2 MiB or more.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/block_cache.h"
#include "memory_pages.h"

namespace collie {
namespace {

using detail::cached_alloc;
using detail::cached_free;

// ctest runs this binary twice: as is, and with COLLIE_HUGE_PAGES=0.
bool huge_pages_on() {
  const char* v = std::getenv("COLLIE_HUGE_PAGES");
  return v == nullptr || std::string(v) != "0";
}

TEST(BlockCache, RoundsLargeBlocksAndAlignsThem) {
  struct Case {
    size_t bytes, capacity, alignment;
  };
  const size_t large_alignment = huge_pages_on() ? 2u << 20 : 64;
  for (const Case& c : {Case{100, 128, 64}, Case{(64u << 10) + 1, 128u << 10, 64},
                        Case{(2u << 20) - 1, 2u << 20, large_alignment},
                        Case{(6u << 20) + 1, 8u << 20, large_alignment}}) {
    SCOPED_TRACE(std::to_string(c.bytes) + " bytes");
    size_t capacity = 0;
    void* block = cached_alloc(c.bytes, &capacity);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(capacity, c.capacity);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % c.alignment, 0u);
    cached_free(block, capacity);
  }
}

TEST(BlockCache, AFreedLargeBlockServesTheNextRequestOfItsSize) {
  size_t capacity = 0;
  void* first = cached_alloc((10u << 20) + 12345, &capacity);
  ASSERT_NE(first, nullptr);
  static_cast<uint8_t*>(first)[capacity - 1] = 7;
  cached_free(first, capacity);
  size_t again = 0;
  void* second = cached_alloc(11u << 20, &again);  // rounds to the same 12 MiB
  EXPECT_EQ(second, first);
  EXPECT_EQ(again, capacity);
  EXPECT_EQ(static_cast<uint8_t*>(second)[capacity - 1], 7);  // the same memory, kept
  cached_free(second, again);
}

// A block of the cache and its capacity.
struct Block {
  void* ptr = nullptr;
  size_t capacity = 0;
};
Block take(size_t bytes) {
  Block b;
  b.ptr = cached_alloc(bytes, &b.capacity);
  return b;
}
void give_back(const Block& b) { cached_free(b.ptr, b.capacity); }

// The last block freed is the first reused: with two of one size cached, a loop
// that frees its output before making the next would otherwise alternate
// between them, writing to twice the memory (block_cache.cc).
TEST(BlockCache, TheLastFreedBlockOfASizeIsReusedFirst) {
  const size_t bytes = 6u << 20;  // rounds to 6 MiB
  const Block a = take(bytes), b = take(bytes);
  ASSERT_NE(a.ptr, nullptr);
  ASSERT_NE(b.ptr, nullptr);
  ASSERT_NE(a.ptr, b.ptr);
  ASSERT_EQ(a.capacity, b.capacity);
  give_back(a);
  give_back(b);
  // Three rounds of "free the output, make the next one": always b.
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const Block next = take(bytes);
    EXPECT_EQ(next.ptr, b.ptr);
    give_back(next);
  }
  // Both taken: b, then a.
  const Block first = take(bytes), second = take(bytes);
  EXPECT_EQ(first.ptr, b.ptr);
  EXPECT_EQ(second.ptr, a.ptr);
  give_back(first);
  give_back(second);
}

// The flags of the mapping that holds `address` (/proc/self/smaps "VmFlags:").
std::string vm_flags_of(const void* address) { return testing::smaps_line(address, "VmFlags:"); }

bool kernel_has_thp() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(mode, text);
  return !text.empty() && text.find("[never]") == std::string::npos;
}

TEST(BlockCache, LargeBlocksAskForHugePagesUnlessTurnedOff) {
  if (!kernel_has_thp()) GTEST_SKIP() << "this kernel has transparent huge pages off";
  size_t capacity = 0;
  void* block = cached_alloc(4u << 20, &capacity);
  ASSERT_NE(block, nullptr);
  // "hg": madvise(MADV_HUGEPAGE) on this range.
  const bool advised = vm_flags_of(block).find(" hg") != std::string::npos;
  EXPECT_EQ(advised, huge_pages_on()) << vm_flags_of(block);
  size_t small_capacity = 0;
  void* small = cached_alloc(256u << 10, &small_capacity);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(vm_flags_of(small).find(" hg"), std::string::npos) << vm_flags_of(small);
  cached_free(small, small_capacity);
  cached_free(block, capacity);
}

}  // namespace
}  // namespace collie
