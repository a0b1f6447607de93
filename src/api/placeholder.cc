// Placeholder results kept per thread (placeholder.h). Making and freeing a new
// one each call cost a send_recv of 8 B (2 ranks) ~160 of its ~2,950
// instructions, and a non-root's gather of 8 B (4 ranks) ~300 of its ~2,270
// (the shape [1] is a vector to allocate, look up and free again) more than
// handing the kept one out does.
#include "api/placeholder.h"

#include <atomic>
#include <cstring>

namespace collie::detail {
namespace {

// `kept` handed out again if nothing else holds it, else a new one from `make`
// (which `kept` then is, so a caller that holds every result costs what it did
// before and one that lets go gets the reuse back).
//
// ThreadSanitizer does not model the standalone fence below (GCC warns that it
// is unsupported there), so under it every call makes a new placeholder: one
// last dropped on another thread would otherwise be reported as a race whenever
// nothing else happened to order that thread's drop before the reuse.
template <typename Make>
Tensor kept_or_new(Tensor& kept, Make make) {
#if defined(__SANITIZE_THREAD__)
  (void)kept;
  return make();
#else
  // A default Tensor (not made yet) shares the empty storage: never one holder.
  if (kept.storage().use_count() != 1) {
    kept = make();
    return kept;
  }
  // The holders that let go released it (their reference drops are release
  // operations); this makes their writes happen before the zeroing below.
  std::atomic_thread_fence(std::memory_order_acquire);
  std::memset(kept.data_ptr(), 0, kept.nbytes());
  return kept;
#endif
}

}  // namespace

Tensor scalar_placeholder() {
  thread_local Tensor kept;
  return kept_or_new(kept, [] { return Tensor::zeros({}); });
}

Tensor row_placeholder(DType dtype) {
  thread_local Tensor kept[kNumDTypes];
  return kept_or_new(kept[static_cast<int>(dtype)], [dtype] { return Tensor::zeros({1}, dtype); });
}

}  // namespace collie::detail
