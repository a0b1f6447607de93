// A fixed number of values, kept inside the object when there are few of them.
//
// Every call of some functions needs a handful of entries per rank or per op:
// an all_to_all's counts and displacements, the parts of a batch of sends and
// receives. A vector for them costs an allocation and a free a call, and with
// the usual few ranks or ops they fit in the object that needs them:
// InlineOrHeap<T, N> holds n values in its own storage when n <= N and in a
// vector (from Alloc) otherwise. The n values are value-initialised (zeroes for
// numbers); only those n are constructed and destroyed. It is neither copyable
// nor movable, so pointers and spans into it stay valid for its whole life.
//
// Example:
//   InlineOrHeap<size_t, 64> counts(2 * n);      // no allocation up to 32 ranks
//   std::span<size_t> send = counts.span().first(n);
//   InlineOrHeap<size_t, 52, PoolAllocator<size_t>> table(words);  // larger: the pool
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

namespace collie::detail {

template <typename T, size_t N, typename Alloc = std::allocator<T>>
class InlineOrHeap {
  // The constructor's loop could not undo a throw halfway.
  static_assert(std::is_nothrow_default_constructible_v<T>);

 public:
  explicit InlineOrHeap(size_t n) {
    if (n > N) {
      heap_.resize(n);
      items_ = std::span<T>(heap_);
    } else {
      T* first = std::launder(reinterpret_cast<T*>(inline_));
      for (size_t i = 0; i < n; ++i) new (first + i) T();
      items_ = std::span<T>(first, n);
    }
  }
  ~InlineOrHeap() {
    if (heap_.empty()) std::destroy(items_.begin(), items_.end());
  }
  InlineOrHeap(const InlineOrHeap&) = delete;
  InlineOrHeap& operator=(const InlineOrHeap&) = delete;

  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  T* data() { return items_.data(); }
  const T* data() const { return items_.data(); }
  size_t size() const { return items_.size(); }
  std::span<T> span() { return items_; }
  std::span<const T> span() const { return items_; }
  // Whether the values live in the object itself (tests).
  bool is_inline() const { return heap_.empty(); }

 private:
  alignas(T) unsigned char inline_[N * sizeof(T)];
  std::vector<T, Alloc> heap_;
  std::span<T> items_;
};

}  // namespace collie::detail
