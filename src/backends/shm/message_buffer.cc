#include "backends/shm/message_buffer.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "core/block_cache.h"

namespace collie::detail {

MessageBuffer::MessageBuffer(MessageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

MessageBuffer& MessageBuffer::operator=(MessageBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

uint8_t* MessageBuffer::extend(size_t n, size_t limit) {
  const size_t needed = size_ + n;
  if (needed > capacity_) {
    // Doubling keeps the copies of a message streamed in small pieces linear.
    const size_t wanted = std::min(limit, std::max(needed, 2 * capacity_));
    size_t got = 0;
    auto* block = static_cast<uint8_t*>(cached_alloc(std::max(wanted, needed), &got));
    if (block == nullptr) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(block, data_, size_);
    cached_free(data_, capacity_);
    data_ = block;
    capacity_ = got;
  }
  uint8_t* room = data_ + size_;
  size_ = needed;
  return room;
}

void MessageBuffer::release() {
  cached_free(data_, capacity_);
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
}

}  // namespace collie::detail
