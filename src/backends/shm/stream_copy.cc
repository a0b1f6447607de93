#include "backends/shm/stream_copy.h"

#include <cstdint>
#include <cstring>

#include "backends/shm/large_copy.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace collie::detail {

void stream_copy(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  // Head: up to the first 16-byte boundary of the destination.
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head > n) head = n;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  size_t blocks = n / 64;
  for (size_t i = 0; i < blocks; ++i, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  _mm_sfence();  // streaming stores are weakly ordered: publish them before any flag
  std::memcpy(d, s, n - blocks * 64);
#else
  std::memcpy(dst, src, n);
#endif
}

OutputCopy gathered_output_copy(size_t bytes) {
  if (bytes < kStreamingGatheredOutputBytes) return OutputCopy::kCached;
  return large_copy_uses_rep_movsb() ? OutputCopy::kRepMovsb : OutputCopy::kStreaming;
}

void copy_output(void* dst, const void* src, size_t n, OutputCopy how) {
  switch (how) {
    case OutputCopy::kCached:
      return large_copy(dst, src, n);
    case OutputCopy::kRepMovsb:
      return large_copy_streaming(dst, src, n);
    case OutputCopy::kStreaming:
      return stream_copy(dst, src, n);
  }
}

}  // namespace collie::detail
