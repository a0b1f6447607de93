// The copy-path preference (src/backends/shm/copy_path.h): which CPUs prefer
// single copies, which are hybrid. COLLIE_COPY_PATH's effect on whole groups is
// tested by the comm tests (cma_test's CmaCopyPath and CmaHybrid, and ctest's
// *_copy_path_* runs).
#include <gtest/gtest.h>

#include "backends/shm/copy_path.h"

namespace collie::detail {
namespace {

TEST(CopyPath, IntelPrefersSingleCopiesZen5IsHybridOthersStage) {
  EXPECT_EQ(copy_path_for_cpu("GenuineIntel", 6), CopyPath::kSingleCopy);
  EXPECT_EQ(copy_path_for_cpu("GenuineIntel", 0), CopyPath::kSingleCopy);
  EXPECT_EQ(copy_path_for_cpu("AuthenticAMD", 0x17), CopyPath::kStaged);  // Zen 1-2
  EXPECT_EQ(copy_path_for_cpu("AuthenticAMD", 0x19), CopyPath::kStaged);  // Zen 3-4
  EXPECT_EQ(copy_path_for_cpu("AuthenticAMD", 0x1A), CopyPath::kHybrid);  // Zen 5
  EXPECT_EQ(copy_path_for_cpu("AuthenticAMD", 0x1B), CopyPath::kHybrid);
  EXPECT_EQ(copy_path_for_cpu("AuthenticAMD", 0), CopyPath::kStaged);
  EXPECT_EQ(copy_path_for_cpu("HygonGenuine", 0x18), CopyPath::kStaged);
  EXPECT_EQ(copy_path_for_cpu("", 0), CopyPath::kStaged);  // not x86, or CPUID failed
}

// A group whose members differ takes the most cautious preference
// (shm_group.cc), which the enum's order encodes.
TEST(CopyPath, PreferencesAreOrderedByCaution) {
  EXPECT_LT(CopyPath::kStaged, CopyPath::kHybrid);
  EXPECT_LT(CopyPath::kHybrid, CopyPath::kSingleCopy);
}

}  // namespace
}  // namespace collie::detail
