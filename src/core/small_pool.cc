#include "core/small_pool.h"

#include <algorithm>
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
size_t class_bytes(int c) { return kMinBlock << c; }
// Blocks a list keeps: kPoolBlocksPerClass, and no more than kPoolBytesPerClass.
unsigned blocks_kept(int c) {
  return static_cast<unsigned>(
      std::min<size_t>(kPoolBlocksPerClass, kPoolBytesPerClass / class_bytes(c)));
}

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
// freed then): `torn_down` sends such late frees to the system.
struct ThreadLists {
  FreeBlock* head[kClasses];
  unsigned count[kClasses];
  bool registered;  // the teardown below is armed for this thread
  bool torn_down;
};
thread_local ThreadLists lists;

// Frees this thread's lists when the thread ends.
struct Teardown {
  ~Teardown() {
    lists.torn_down = true;
    for (int c = 0; c < kClasses; ++c) {
      while (FreeBlock* b = lists.head[c]) {
        lists.head[c] = b->next;
        system_free(b);
      }
      lists.count[c] = 0;
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
  if (FreeBlock* b = lists.head[c]) {
    lists.head[c] = b->next;
    --lists.count[c];
    return b;
  }
  return system_alloc(class_bytes(c));
}

void pool_free(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (COLLIE_POOL_BYPASS || bytes > kPoolMaxBytes) return system_free(block);
  const int c = class_of(bytes);
  if (lists.torn_down || lists.count[c] >= blocks_kept(c)) return system_free(block);
  if (!lists.registered) arm_teardown();
  auto* b = static_cast<FreeBlock*>(block);
  b->next = lists.head[c];
  lists.head[c] = b;
  ++lists.count[c];
}

}  // namespace collie::detail
