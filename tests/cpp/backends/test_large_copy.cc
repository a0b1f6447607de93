// large_copy (src/backends/shm/large_copy.h) and copy_output (stream_copy.h):
// which CPUs take `rep movsb`, how outputs are written, and that every way of
// copying is exact at every size around the thresholds (in one piece or
// several), from and to every alignment, touching nothing outside the
// destination.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/shm/copy_path.h"
#include "backends/shm/large_copy.h"
#include "backends/shm/stream_copy.h"

namespace collie::detail {
namespace {

TEST(LargeCopy, RepMovsbOnlyOnZen5AndLaterWithErms) {
  EXPECT_TRUE(large_copy_rep_movsb_for_cpu("AuthenticAMD", 0x1A, true));  // Zen 5
  EXPECT_TRUE(large_copy_rep_movsb_for_cpu("AuthenticAMD", 0x1B, true));
  EXPECT_FALSE(large_copy_rep_movsb_for_cpu("AuthenticAMD", 0x1A, false));  // no ERMS
  EXPECT_FALSE(large_copy_rep_movsb_for_cpu("AuthenticAMD", 0x19, true));   // Zen 3-4
  EXPECT_FALSE(large_copy_rep_movsb_for_cpu("GenuineIntel", 6, true));      // glibc does already
  EXPECT_FALSE(large_copy_rep_movsb_for_cpu("", 0, false));                 // not x86
}

// Every Zen 5 has ERMS, so here the rule comes down to vendor and family.
TEST(LargeCopy, ThisCpuFollowsTheRule) {
  const bool zen5_or_later = cpu_vendor() == "AuthenticAMD" && cpu_family() >= 0x1A;
  EXPECT_EQ(large_copy_uses_rep_movsb(), zen5_or_later);
}

// all_gather's and all_to_all's outputs: kept in cache below
// kStreamingGatheredOutputBytes, then streaming stores, but one `rep movsb`
// where large_copy uses it.
TEST(LargeCopy, GatheredOutputsGoPastTheCacheFromTheirThreshold) {
  EXPECT_EQ(gathered_output_copy(kStreamingGatheredOutputBytes - 1), OutputCopy::kCached);
  EXPECT_EQ(gathered_output_copy(1u << 20), OutputCopy::kCached);
  const OutputCopy past =
      large_copy_uses_rep_movsb() ? OutputCopy::kRepMovsb : OutputCopy::kStreaming;
  EXPECT_EQ(gathered_output_copy(kStreamingGatheredOutputBytes), past);
  EXPECT_EQ(gathered_output_copy(size_t{1} << 30), past);
}

// One `rep movsb` of 4 MiB or more streams past the cache on Zen 5: large_copy
// copies from there in smaller pieces.
TEST(LargeCopy, CopiesThatWouldStreamGoInPieces) {
  EXPECT_EQ(large_copy_piece_bytes(kLargeCopyBytes), kLargeCopyBytes);
  EXPECT_EQ(large_copy_piece_bytes(kRepMovsbStreamsFrom - 1), kRepMovsbStreamsFrom - 1);
  EXPECT_EQ(large_copy_piece_bytes(kRepMovsbStreamsFrom), kLargeCopyPieceBytes);
  EXPECT_EQ(large_copy_piece_bytes(size_t{1} << 30), kLargeCopyPieceBytes);
}

// Byte i of the source is 7i + i/251 (mod 256): neighbouring bytes always
// differ, so a shifted or truncated copy shows.
uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 7 + i / 251); }

TEST(LargeCopy, CopiesExactlyAtEverySizeAndAlignment) {
  constexpr size_t kGuard = 64;
  const size_t sizes[] = {0,
                          1,
                          63,
                          4096,
                          kLargeCopyBytes - 1,
                          kLargeCopyBytes,
                          kLargeCopyBytes + 1,
                          kLargeCopyBytes + 4097,
                          3 * kLargeCopyBytes,
                          kRepMovsbStreamsFrom,
                          kRepMovsbStreamsFrom + 4097,  // pieces, the last short
                          2 * kRepMovsbStreamsFrom + 1};
  for (size_t n : sizes) {
    for (size_t src_off : {0, 1, 8, 63}) {
      for (size_t dst_off : {0, 3, 32}) {
        std::vector<uint8_t> src(n + src_off);
        for (size_t i = 0; i < n; ++i) src[src_off + i] = pattern(i);
        std::vector<uint8_t> dst(n + dst_off + 2 * kGuard, 0xA5);
        for (OutputCopy how :
             {OutputCopy::kCached, OutputCopy::kRepMovsb, OutputCopy::kStreaming}) {
          std::fill(dst.begin(), dst.end(), uint8_t{0xA5});
          copy_output(dst.data() + kGuard + dst_off, src.data() + src_off, n, how);
          size_t wrong = 0;
          for (size_t i = 0; i < n; ++i) wrong += dst[kGuard + dst_off + i] != pattern(i);
          EXPECT_EQ(wrong, 0u) << n << " bytes from offset " << src_off << " to " << dst_off
                               << ", copy " << static_cast<int>(how);
          for (size_t i = 0; i < kGuard + dst_off; ++i) ASSERT_EQ(dst[i], 0xA5) << "before, " << n;
          for (size_t i = kGuard + dst_off + n; i < dst.size(); ++i)
            ASSERT_EQ(dst[i], 0xA5) << "after, " << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace collie::detail
