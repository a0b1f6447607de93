// Storage: owned 64-byte aligned memory (zeroed unless asked otherwise), or a view
// on caller memory.
#include <cstdlib>
#include <cstring>
#include <new>

#include "collie/tensor.h"
#include "core/block_cache.h"

namespace collie {

Storage::Storage(size_t nbytes, bool zero) : nbytes_(nbytes), owned_(true) {
  // Small data (every small collective's output) lives inline: a cached block
  // would cost an allocation and a free (~100 instructions) and a cache line of
  // its own. Empty storage points there too, so data() is never null
  // (memcpy(null, ..., 0) is UB). cached_alloc rounds to the alignment.
  if (nbytes <= kInlineBytes) {
    data_ = inline_;
  } else {
    data_ = detail::cached_alloc(nbytes, &capacity_);
    if (data_ == nullptr) throw std::bad_alloc();
  }
  if (zero) std::memset(data_, 0, nbytes);
}

Storage::Storage(void* data, size_t nbytes, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), owned_(false), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (owned_) {
    if (data_ != inline_) detail::cached_free(data_, capacity_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace collie
