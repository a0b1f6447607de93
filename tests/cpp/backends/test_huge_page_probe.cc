// huge_page_probe (src/backends/shm/huge_page_probe.h) against the kernel's own
// account of the same mapping in /proc/self/smaps (AnonHugePages): whatever
// the machine's transparent-huge-page mode, the two must agree.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <optional>

#include "backends/shm/huge_page_probe.h"
#include "memory_pages.h"

namespace collie::detail {
namespace {

using testing::AdvisedMapping;
using testing::kHugePageBytes;
using testing::smaps_anon_huge_bytes;

TEST(HugePageProbe, AgreesWithSmapsOnMemoryAdvisedForHugePages) {
  AdvisedMapping m(4 * kHugePageBytes, MADV_HUGEPAGE);
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
  AdvisedMapping m(2 * kHugePageBytes, MADV_NOHUGEPAGE);
  EXPECT_EQ(smaps_anon_huge_bytes(m.data()), 0u);
  EXPECT_EQ(huge_page_bytes(m.data(), m.bytes()).value_or(0), 0u);
  EXPECT_FALSE(lies_on_huge_pages(m.data(), m.bytes()));
}

TEST(HugePageProbe, ARangeIsRoundedOutToWholePages) {
  AdvisedMapping m(kHugePageBytes, MADV_HUGEPAGE);
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
