// The per-thread pool behind Work, operation states, Storage and small blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "core/small_pool.h"

namespace collie::detail {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooled = false;  // bypassed so that ASan sees every free
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kPooled = false;
#else
constexpr bool kPooled = true;
#endif
#else
constexpr bool kPooled = true;
#endif

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kPoolAlignment == 0; }

TEST(SmallPool, BlocksOfEverySizeAreAlignedWritableAndDistinct) {
  std::vector<std::pair<void*, size_t>> blocks;
  std::set<void*> seen;
  for (size_t bytes :
       {1, 8, 63, 64, 65, 100, 128, 200, 256, 511, 512, 1000, 1024, 1025, 2048, 5000, 8192, 8193}) {
    for (int i = 0; i < 3; ++i) {
      void* p = pool_alloc(bytes);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(aligned(p)) << bytes;
      std::memset(p, 0xab, bytes);  // the whole size is usable
      EXPECT_TRUE(seen.insert(p).second) << "block handed out twice";
      blocks.emplace_back(p, bytes);
    }
  }
  // Nothing written into one block shows up in another.
  for (auto& [p, bytes] : blocks) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(b[i], 0xab);
  }
  for (auto& [p, bytes] : blocks) pool_free(p, bytes);
}

TEST(SmallPool, AFreedBlockIsReusedForTheSameSizeClass) {
  void* p = pool_alloc(100);  // class 128
  pool_free(p, 100);
  void* q = pool_alloc(120);
  if (kPooled) {
    EXPECT_EQ(q, p);
  }
  pool_free(q, 120);
  // A small tensor's data block (2 KiB: glibc's bins, not its thread cache).
  void* data = pool_alloc(2048);
  pool_free(data, 2048);
  void* again = pool_alloc(1500);  // class 2048
  if (kPooled) {
    EXPECT_EQ(again, data);
  }
  pool_free(again, 1500);
  void* big = pool_alloc(kPoolMaxBytes + 1);  // beyond the pool: never kept
  pool_free(big, kPoolMaxBytes + 1);
  pool_free(nullptr, 64);  // allowed, like operator delete
}

TEST(SmallPool, ListsAreBoundedAndBlocksMayMoveBetweenThreads) {
  // Blocks made here and freed on another thread (an async operation finished by
  // the progress thread), more than one list keeps, then that thread exits.
  std::vector<void*> blocks;
  for (unsigned i = 0; i < 3 * kPoolBlocksPerClass; ++i) blocks.push_back(pool_alloc(64));
  std::thread other([&] {
    for (void* p : blocks) pool_free(p, 64);
    void* again = pool_alloc(64);  // served from this thread's list
    EXPECT_TRUE(aligned(again));
    pool_free(again, 64);
  });
  other.join();
  void* mine = pool_alloc(64);
  EXPECT_TRUE(aligned(mine));
  pool_free(mine, 64);
}

TEST(SmallPool, AListKeepsAtMostItsShare) {
  std::vector<void*> blocks;
  for (unsigned i = 0; i < kPoolBlocksPerClass + 5; ++i) blocks.push_back(pool_alloc(64));
  std::vector<void*> big;
  for (unsigned i = 0; i < 10; ++i) big.push_back(pool_alloc(8192));
  std::thread other([&] {
    for (void* p : blocks) pool_free(p, 64);
    for (void* p : big) pool_free(p, 8192);
    // The rest went to the system (ASan builds keep nothing: every free is seen).
    EXPECT_EQ(pool_blocks_kept(64), kPooled ? kPoolBlocksPerClass : 0u);
    EXPECT_EQ(pool_blocks_kept(8192), kPooled ? kPoolBytesPerClass / 8192 : 0u);
  });
  other.join();
}

// A block freed by a thread_local object that outlives the pool's teardown (a
// Tensor held in one, destroyed as the thread ends) goes to the system: the
// torn-down lists keep nothing, so nothing leaks.
TEST(SmallPool, FreesAfterTheThreadsTeardownGoToTheSystem) {
  struct LateHolder {
    void* block = nullptr;
    size_t* kept_after = nullptr;
    ~LateHolder() {
      pool_free(block, 64);  // after the teardown: destroyed in reverse order of construction
      *kept_after = pool_blocks_kept(64);
      void* again = pool_alloc(64);  // still served, by the system
      std::memset(again, 1, 64);
      pool_free(again, 64);
      *kept_after += pool_blocks_kept(64);
    }
  };
  size_t kept_after = 99, kept_before_exit = 0;
  std::thread other([&] {
    thread_local LateHolder holder;  // made before the pool arms its teardown
    holder.block = pool_alloc(64);
    holder.kept_after = &kept_after;
    pool_free(pool_alloc(64), 64);  // arms the teardown, keeps one block
    kept_before_exit = pool_blocks_kept(64);
  });
  other.join();
  EXPECT_EQ(kept_before_exit, kPooled ? 1u : 0u);
  EXPECT_EQ(kept_after, 0u);
}

TEST(SmallPool, SharedObjectsUseItThroughTheAllocator) {
  struct Payload {
    int64_t values[10];
  };
  std::weak_ptr<Payload> weak;
  {
    auto p = std::allocate_shared<Payload>(PoolAllocator<Payload>{});
    for (int i = 0; i < 10; ++i) p->values[i] = i * i;
    EXPECT_EQ(p->values[9], 81);
    weak = p;
  }
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace collie::detail
