// The buffer an early point-to-point message waits in (backends/shm/message_buffer.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "backends/shm/message_buffer.h"

// Under AddressSanitizer (scripts/sanitize.sh) an impossible allocation must fail
// with nullptr, as it does without it, instead of aborting the test.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace collie::detail {
namespace {

// Byte i of a message: a pattern that differs between neighbouring pieces.
uint8_t byte_at(size_t i) { return static_cast<uint8_t>((i * 131 + i / 4096) & 0xff); }

void fill(uint8_t* dst, size_t from, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = byte_at(from + i);
}

bool holds_message(const MessageBuffer& b, size_t n) {
  if (b.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (b.data()[i] != byte_at(i)) return false;
  }
  return true;
}

TEST(MessageBuffer, PiecesArriveInOrderAndKeepEveryByte) {
  for (size_t total : {size_t{1}, size_t{100}, size_t{65536}, size_t{300000}, size_t{1} << 21}) {
    for (size_t piece : {size_t{1000}, size_t{4096}, size_t{65536}}) {
      MessageBuffer b;
      for (size_t at = 0; at < total; at += piece) {
        const size_t n = std::min(piece, total - at);
        fill(b.extend(n, total), at, n);
      }
      EXPECT_TRUE(holds_message(b, total)) << total << " bytes in pieces of " << piece;
      EXPECT_GE(b.capacity(), total);
    }
  }
}

TEST(MessageBuffer, NeverAllocatesWhatTheHeaderOnlyClaims) {
  // A header claiming 1 TiB, then 4 KiB of payload: at most twice what arrived.
  MessageBuffer b;
  const size_t claimed = size_t{1} << 40;
  fill(b.extend(4096, claimed), 0, 4096);
  EXPECT_LE(b.capacity(), size_t{64} << 10);  // one 64 KiB block at most
  fill(b.extend(200000, claimed), 4096, 200000);
  EXPECT_TRUE(holds_message(b, 204096));
  EXPECT_LE(b.capacity(), 2 * size_t{204096} + (size_t{64} << 10));
}

TEST(MessageBuffer, GrowsToTheMessageSizeAtMost) {
  MessageBuffer b;
  fill(b.extend(100000, 150000), 0, 100000);
  fill(b.extend(50000, 150000), 100000, 50000);
  EXPECT_TRUE(holds_message(b, 150000));
  EXPECT_LT(b.capacity(), 200000u);  // not doubled past the 150000 the message holds
}

TEST(MessageBuffer, AMessageOfTheSameSizeReusesTheFreedBlock) {
  // The point of the block cache: a stream of early 512 KiB messages does not
  // map and fault in fresh pages for each one.
  const uint8_t* first = nullptr;
  {
    MessageBuffer b;
    fill(b.extend(512 << 10, 512 << 10), 0, 512 << 10);
    first = b.data();
  }
  MessageBuffer again;
  fill(again.extend(512 << 10, 512 << 10), 0, 512 << 10);
  EXPECT_EQ(again.data(), first);
  EXPECT_TRUE(holds_message(again, 512 << 10));
}

TEST(MessageBuffer, MovesAndReleases) {
  MessageBuffer a;
  fill(a.extend(3000, 3000), 0, 3000);
  MessageBuffer b = std::move(a);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_TRUE(holds_message(b, 3000));
  MessageBuffer c;
  fill(c.extend(10, 10), 0, 10);
  c = std::move(b);
  EXPECT_TRUE(holds_message(c, 3000));
  c.release();
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.data(), nullptr);
  fill(c.extend(5, 5), 0, 5);  // usable again
  EXPECT_TRUE(holds_message(c, 5));
}

TEST(MessageBuffer, OutOfMemoryLeavesTheBufferAsItWas) {
  MessageBuffer b;
  fill(b.extend(1000, 1000), 0, 1000);
  EXPECT_THROW(b.extend(size_t{1} << 62, size_t{1} << 62), std::bad_alloc);
  EXPECT_TRUE(holds_message(b, 1000));
}

}  // namespace
}  // namespace collie::detail
