// huge_page_probe (src/backends/shm/huge_page_probe.h) against the kernel's own
// account of the same mapping in /proc/self/smaps (AnonHugePages): whatever
// the machine's transparent-huge-page mode, the two must agree.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "backends/shm/huge_page_probe.h"

namespace collie::detail {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// An anonymous mapping of `huge_pages` 2 MiB pages, aligned to 2 MiB, advised
// as `advice` and written through (so every page is present).
class Mapping {
 public:
  Mapping(size_t huge_pages, int advice) : bytes_(huge_pages * kHugePage) {
    // Map one huge page more, to align the start.
    raw_ = mmap(nullptr, bytes_ + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    if (raw_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    const uintptr_t at = (reinterpret_cast<uintptr_t>(raw_) + kHugePage - 1) & ~(kHugePage - 1);
    data_ = reinterpret_cast<uint8_t*>(at);
    madvise(data_, bytes_, advice);
    std::memset(data_, 1, bytes_);
  }
  ~Mapping() { munmap(raw_, bytes_ + kHugePage); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  void* raw_ = nullptr;
  uint8_t* data_ = nullptr;
};

// AnonHugePages of the mapping of /proc/self/smaps that starts exactly at `p`
// (the madvise above split the mapping there), in bytes.
size_t smaps_anon_huge_bytes(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false;
  while (std::getline(smaps, line)) {
    unsigned long start = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> start >> dash >> end && dash == '-') {
      in_mapping = start == reinterpret_cast<uintptr_t>(p);
      continue;
    }
    if (in_mapping && line.rfind("AnonHugePages:", 0) == 0) {
      size_t kib = 0;
      std::istringstream(line.substr(14)) >> kib;
      return kib << 10;
    }
  }
  ADD_FAILURE() << "no mapping starting at " << p << " in /proc/self/smaps";
  return 0;
}

TEST(HugePageProbe, AgreesWithSmapsOnMemoryAdvisedForHugePages) {
  Mapping m(4, MADV_HUGEPAGE);
  const size_t expected = smaps_anon_huge_bytes(m.data());
  const std::optional<size_t> huge = huge_page_bytes(m.data(), m.bytes());
  if (huge.has_value()) {
    EXPECT_EQ(*huge, expected);
    EXPECT_EQ(lies_on_huge_pages(m.data(), m.bytes()), expected * 2 >= m.bytes());
  } else {
    // A kernel before 6.7: nothing can be told, so nothing counts as huge.
    EXPECT_FALSE(lies_on_huge_pages(m.data(), m.bytes()));
  }
}

TEST(HugePageProbe, MemoryAdvisedAgainstHugePagesIsNotOnThem) {
  Mapping m(2, MADV_NOHUGEPAGE);
  EXPECT_EQ(smaps_anon_huge_bytes(m.data()), 0u);
  EXPECT_EQ(huge_page_bytes(m.data(), m.bytes()).value_or(0), 0u);
  EXPECT_FALSE(lies_on_huge_pages(m.data(), m.bytes()));
}

TEST(HugePageProbe, ARangeIsRoundedOutToWholePages) {
  Mapping m(1, MADV_HUGEPAGE);
  const std::optional<size_t> whole = huge_page_bytes(m.data(), m.bytes());
  if (!whole.has_value() || *whole != m.bytes()) {
    // Not on a huge page here (THP off, or no memory for one): the sub-range
    // then has none either.
    EXPECT_EQ(huge_page_bytes(m.data() + 100, 4096).value_or(0), 0u);
    return;
  }
  // 4096 bytes from offset 100 touch two 4 KiB pages.
  EXPECT_EQ(huge_page_bytes(m.data() + 100, 4096), std::optional<size_t>(8192));
  EXPECT_EQ(huge_page_bytes(m.data(), 0), std::optional<size_t>(0));
  EXPECT_TRUE(lies_on_huge_pages(m.data() + 100, 4096));
  EXPECT_FALSE(lies_on_huge_pages(m.data(), 0));
}

}  // namespace
}  // namespace collie::detail
