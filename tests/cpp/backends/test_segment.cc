// Segment::prefault and Segment::touch: which pages of a shared-memory mapping
// they put in this process's page tables, read back from /proc/self/pagemap
// (bit 63: present). A page of a fresh mapping is not present until touched;
// each must map exactly the pages of its range (cut to the segment) and leave
// the bytes as they were. A world's own segment is prefaulted whole when it is
// made.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/shm/segment.h"
#include "backends/shm/shm_group.h"
#include "self_world.h"

namespace collie::detail {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// Whether each of the `pages` pages from `base` is present in this process's
// page tables.
std::vector<bool> present_pages(const void* base, size_t pages) {
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return {};
  std::vector<uint64_t> entries(pages);
  const off_t at = static_cast<off_t>(reinterpret_cast<uintptr_t>(base) / kPage * sizeof(uint64_t));
  const ssize_t got = pread(fd, entries.data(), pages * sizeof(uint64_t), at);
  close(fd);
  if (got != static_cast<ssize_t>(pages * sizeof(uint64_t))) return {};
  std::vector<bool> present(pages);
  for (size_t i = 0; i < pages; ++i) present[i] = (entries[i] >> 63) & 1;
  return present;
}

// A fresh segment of `pages` pages, its name unlinked at once.
Segment fresh_segment(size_t pages) {
  static int counter = 0;
  const std::string name =
      "/collie-segtest-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  Segment seg;
  EXPECT_TRUE(Segment::create(name, pages * kPage, &seg));
  Segment::unlink(name);
  return seg;
}

TEST(Segment, PrefaultMapsExactlyThePagesOfItsRange) {
  constexpr size_t kPages = 32;
  Segment seg = fresh_segment(kPages);
  const std::vector<bool> before = present_pages(seg.data(), kPages);
  ASSERT_EQ(before.size(), kPages) << "/proc/self/pagemap is not readable here";
  for (size_t i = 0; i < kPages; ++i)
    ASSERT_FALSE(before[i]) << "page " << i << " of a fresh mapping";

  // From 100 bytes into page 5 for three pages' worth: pages 5 to 8.
  seg.prefault(5 * kPage + 100, 3 * kPage);
  const std::vector<bool> after = present_pages(seg.data(), kPages);
  ASSERT_EQ(after.size(), kPages);
  for (size_t i = 0; i < kPages; ++i) {
    EXPECT_EQ(after[i], i >= 5 && i <= 8) << "page " << i;
  }
  const auto* bytes = static_cast<const uint8_t*>(seg.data());
  for (size_t i = 0; i < kPages * kPage; ++i) ASSERT_EQ(bytes[i], 0) << "byte " << i;
}

TEST(Segment, PrefaultIsCutToTheSegment) {
  constexpr size_t kPages = 8;
  Segment seg = fresh_segment(kPages);
  seg.prefault(kPages * kPage, kPage);    // starts at the end: nothing
  seg.prefault(6 * kPage, 1000 * kPage);  // runs past the end: pages 6 and 7
  const std::vector<bool> present = present_pages(seg.data(), kPages);
  ASSERT_EQ(present.size(), kPages) << "/proc/self/pagemap is not readable here";
  for (size_t i = 0; i < kPages; ++i) EXPECT_EQ(present[i], i >= 6) << "page " << i;
}

// touch() reads its pages, which maps the pages of a fresh mapping: the same
// range rules as prefault().
TEST(Segment, TouchReadsExactlyThePagesOfItsRange) {
  constexpr size_t kPages = 16;
  Segment seg = fresh_segment(kPages);
  seg.touch(2 * kPage + kPage - 1, 2 * kPage);  // last byte of page 2 on: pages 2 to 4
  seg.touch(kPages * kPage, kPage);             // starts at the end: nothing
  seg.touch(14 * kPage, 1000 * kPage);          // runs past the end: pages 14 and 15
  const std::vector<bool> present = present_pages(seg.data(), kPages);
  ASSERT_EQ(present.size(), kPages) << "/proc/self/pagemap is not readable here";
  for (size_t i = 0; i < kPages; ++i) {
    EXPECT_EQ(present[i], (i >= 2 && i <= 4) || i >= 14) << "page " << i;
  }
  const auto* bytes = static_cast<const uint8_t*>(seg.data());
  for (size_t i = 0; i < kPages * kPage; ++i) ASSERT_EQ(bytes[i], 0) << "byte " << i;
}

TEST(Segment, AWorldsOwnSegmentIsPrefaultedWhenMade) {
  ShmGroup world(self_world_config("segtest", 0x5e6, 64 * 1024, 5));
  // The ring this rank writes to itself, first and last page; and its first slot.
  const uint8_t* ring = world.ring_data(0, 0);
  const uint8_t* slot = world.slot(0, 0);
  for (const uint8_t* page : {ring, ring + 64 * 1024 - kPage, slot}) {
    const std::vector<bool> present = present_pages(page, 1);
    ASSERT_EQ(present.size(), 1u) << "/proc/self/pagemap is not readable here";
    EXPECT_TRUE(present[0]) << "page at " << static_cast<const void*>(page);
  }
}

}  // namespace
}  // namespace collie::detail
