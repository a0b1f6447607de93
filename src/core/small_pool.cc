#include "core/small_pool.h"

#include <algorithm>
#include <array>
#include <bit>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define COLLIE_POOL_BYPASS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLLIE_POOL_BYPASS 1
#endif
#endif
#ifndef COLLIE_POOL_BYPASS
#define COLLIE_POOL_BYPASS 0
#endif

namespace collie::detail {
namespace {

constexpr size_t kMinBlock = 64;
constexpr int kClasses = 8;  // 64, 128, ..., 8192 bytes
static_assert(kMinBlock << (kClasses - 1) == kPoolMaxBytes);
static_assert(kMinBlock % kPoolAlignment == 0);

// Size class of a block of `bytes` (<= kPoolMaxBytes).
int class_of(size_t bytes) {
  return bytes <= kMinBlock ? 0 : std::bit_width(bytes - 1) - std::bit_width(kMinBlock - 1);
}
constexpr size_t class_bytes(int c) { return kMinBlock << c; }
// Blocks a list keeps: kPoolBlocksPerClass, and no more than kPoolBytesPerClass.
constexpr unsigned blocks_kept(int c) {
  return static_cast<unsigned>(
      std::min<size_t>(kPoolBlocksPerClass, kPoolBytesPerClass / class_bytes(c)));
}
constexpr auto kBlocksKept = [] {
  std::array<unsigned, kClasses> kept{};
  for (int c = 0; c < kClasses; ++c) kept[static_cast<size_t>(c)] = blocks_kept(c);
  return kept;
}();
// A list's count once its thread's teardown ran: never below kBlocksKept, so
// every later free goes to the system without a test of its own.
constexpr unsigned kTornDown = ~0u;

void* system_alloc(size_t bytes) {
  return ::operator new (bytes, std::align_val_t{kPoolAlignment});
}
void system_free(void* block) noexcept {
  ::operator delete (block, std::align_val_t{kPoolAlignment});
}

struct FreeBlock {
  FreeBlock* next;
};

// Trivially destructible, so it may still be read after the thread's other
// thread_local objects were destroyed (a Tensor held by one of them may be
// freed then): the teardown leaves every list empty with count kTornDown, which
// sends such late frees to the system.
struct ThreadLists {
  FreeBlock* head[kClasses];
  unsigned count[kClasses];
  bool registered;  // the teardown below is armed for this thread
};
thread_local ThreadLists lists;

// Frees this thread's lists when the thread ends.
struct Teardown {
  ~Teardown() {
    for (int c = 0; c < kClasses; ++c) {
      while (FreeBlock* b = lists.head[c]) {
        lists.head[c] = b->next;
        system_free(b);
      }
      lists.count[c] = kTornDown;
    }
  }
};

void arm_teardown() {
  thread_local Teardown teardown;
  (void)teardown;
  lists.registered = true;
}

}  // namespace

void* pool_alloc(size_t bytes) {
  if (COLLIE_POOL_BYPASS || bytes > kPoolMaxBytes) return system_alloc(bytes);
  const int c = class_of(bytes);
  ThreadLists& l = lists;
  if (FreeBlock* b = l.head[c]) {
    l.head[c] = b->next;
    --l.count[c];
    return b;
  }
  return system_alloc(class_bytes(c));
}

void pool_free(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (COLLIE_POOL_BYPASS || bytes > kPoolMaxBytes) return system_free(block);
  const int c = class_of(bytes);
  ThreadLists& l = lists;
  if (l.count[c] >= kBlocksKept[static_cast<size_t>(c)]) return system_free(block);
  if (!l.registered) [[unlikely]]
    arm_teardown();
  auto* b = static_cast<FreeBlock*>(block);
  b->next = l.head[c];
  l.head[c] = b;
  ++l.count[c];
}

size_t pool_blocks_kept(size_t bytes) noexcept {
  if (COLLIE_POOL_BYPASS || bytes > kPoolMaxBytes) return 0;
  size_t kept = 0;
  for (const FreeBlock* b = lists.head[class_of(bytes)]; b != nullptr; b = b->next) ++kept;
  return kept;
}

}  // namespace collie::detail
