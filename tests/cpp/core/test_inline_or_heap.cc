// InlineOrHeap: n values inside the object up to N, in a vector beyond.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/inline_or_heap.h"
#include "core/small_pool.h"

namespace collie::detail {
namespace {

bool inside(const void* p, const void* object, size_t bytes) {
  auto a = reinterpret_cast<uintptr_t>(p), o = reinterpret_cast<uintptr_t>(object);
  return a >= o && a < o + bytes;
}

TEST(InlineOrHeap, ValuesUpToNLiveInTheObjectAndBeyondInAVector) {
  for (size_t n : {0, 1, 7, 8}) {
    InlineOrHeap<size_t, 8> v(n);
    EXPECT_TRUE(v.is_inline()) << n;
    EXPECT_EQ(v.size(), n);
    if (n > 0) {
      EXPECT_TRUE(inside(v.data(), &v, sizeof(v))) << n;
    }
  }
  for (size_t n : {9, 100}) {
    InlineOrHeap<size_t, 8> v(n);
    EXPECT_FALSE(v.is_inline()) << n;
    EXPECT_EQ(v.size(), n);
    EXPECT_FALSE(inside(v.data(), &v, sizeof(v))) << n;
  }
}

TEST(InlineOrHeap, ValuesStartZeroAndKeepWhatIsWritten) {
  for (size_t n : {5, 8, 9, 40}) {
    InlineOrHeap<uint64_t, 8, PoolAllocator<uint64_t>> v(n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(v[i], 0u) << n << " " << i;
    for (size_t i = 0; i < n; ++i) v[i] = 3 * i + 1;
    const auto& c = v;
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(c[i], 3 * i + 1) << n << " " << i;
    ASSERT_EQ(c.span().size(), n);
    EXPECT_EQ(c.span().data(), c.data());
    EXPECT_EQ(c.span()[n - 1], 3 * (n - 1) + 1);
  }
}

// Counts the live objects, to see that exactly the n in use are made and dropped.
struct Counted {
  static inline int live = 0;
  static inline int made = 0;
  std::string text = "made";  // a member with its own destructor
  Counted() noexcept {
    ++live;
    ++made;
  }
  ~Counted() { --live; }
};

TEST(InlineOrHeap, ConstructsAndDestroysOnlyTheValuesInUse) {
  for (size_t n : {0, 3, 4, 5, 12}) {
    Counted::live = Counted::made = 0;
    {
      InlineOrHeap<Counted, 4> v(n);
      EXPECT_EQ(Counted::live, static_cast<int>(n)) << n;
      EXPECT_EQ(Counted::made, static_cast<int>(n)) << n;
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(v[i].text, "made");
    }
    EXPECT_EQ(Counted::live, 0) << n;
  }
}

}  // namespace
}  // namespace collie::detail
