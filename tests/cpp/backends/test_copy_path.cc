// The copy-path preference (src/backends/shm/copy_path.h): which CPUs prefer
// single copies. COLLIE_COPY_PATH's effect on whole groups is tested by the
// comm tests (cma_test's CmaCopyPath, and ctest's *_copy_path_* runs).
#include <gtest/gtest.h>

#include "backends/shm/copy_path.h"

namespace collie::detail {
namespace {

TEST(CopyPath, IntelPrefersSingleCopiesOthersStage) {
  EXPECT_EQ(copy_path_for_vendor("GenuineIntel"), CopyPath::kSingleCopy);
  EXPECT_EQ(copy_path_for_vendor("AuthenticAMD"), CopyPath::kStaged);
  EXPECT_EQ(copy_path_for_vendor("HygonGenuine"), CopyPath::kStaged);
  EXPECT_EQ(copy_path_for_vendor(""), CopyPath::kStaged);  // not x86, or CPUID failed
}

}  // namespace
}  // namespace collie::detail
