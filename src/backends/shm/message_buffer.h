// MessageBuffer: the bytes of a point-to-point message that arrived before its
// receive was posted (p2p.h's "unexpected" messages), held until it is.
//
// It grows as the bytes arrive, never beyond what the message's header claims and
// at most to twice what has arrived (a header is external input: a size it merely
// claims is not allocated up front). Its memory comes from the block cache
// (core/block_cache.h) and is never zero-filled: in a loop of exchanges where
// messages often arrive early (ranks sharing cores), every message used to get
// fresh pages from malloc, which the kernel zeroed and faulted in — 4 ranks on 2
// cores, 512 KiB send_recv back to back: about 60 page faults per call.
//
//   MessageBuffer b;
//   uint8_t* room = b.extend(n, claimed_total);  // std::bad_alloc when out of memory
//   read_into(room, n);
//   memcpy(dst, b.data(), b.size());
#pragma once

#include <cstddef>
#include <cstdint>

namespace collie::detail {

class MessageBuffer {
 public:
  MessageBuffer() = default;
  ~MessageBuffer() { release(); }
  MessageBuffer(MessageBuffer&& other) noexcept;
  MessageBuffer& operator=(MessageBuffer&& other) noexcept;
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Bytes allocated (the block cache rounds sizes of 64 KiB and more up).
  size_t capacity() const { return capacity_; }

  // Grows the buffer by `n` bytes (uninitialised) and returns where they start.
  // The capacity grows to at most `limit` bytes in all (the message's size), which
  // must be at least size() + n. std::bad_alloc if the memory is not there; the
  // buffer is then unchanged.
  uint8_t* extend(size_t n, size_t limit);
  // Frees the memory (size() becomes 0).
  void release();

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace collie::detail
