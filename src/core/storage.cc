// Storage: owned 64-byte aligned zeroed memory, or a view on caller memory.
#include <cstdlib>
#include <cstring>
#include <new>

#include "collie/tensor.h"

namespace collie {

namespace {

// 64 bytes: a cache line, and enough for any SIMD load the kernels may use.
constexpr size_t kAlignment = 64;

}  // namespace

Storage::Storage(size_t nbytes) : nbytes_(nbytes), owned_(true) {
  // aligned_alloc needs a size that is a multiple of the alignment. Empty storage
  // still gets one block so that data() is never null (memcpy(null, ..., 0) is UB).
  const size_t padded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = std::aligned_alloc(kAlignment, padded == 0 ? kAlignment : padded);
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, nbytes);
}

Storage::Storage(void* data, size_t nbytes, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), owned_(false), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (owned_) {
    std::free(data_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace collie
