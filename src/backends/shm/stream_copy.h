// stream_copy: memcpy with non-temporal stores, for outputs far larger than the caches.
//
// A normal store to a line not in cache first reads it (read-for-ownership), so
// writing a 64 MiB output costs 128 MiB of memory traffic. Streaming stores skip
// the read and keep the output from evicting the staging slots, which peers are
// about to read. Only worth it for large outputs: small ones are read back soon.
#pragma once

#include <cstddef>

namespace collie::detail {

// Copies n bytes; uses streaming stores for the 16-byte aligned middle part on x86-64.
void stream_copy(void* dst, const void* src, size_t n);

// Outputs at least this large use stream_copy.
inline constexpr size_t kStreamingOutputBytes = 8u << 20;

}  // namespace collie::detail
