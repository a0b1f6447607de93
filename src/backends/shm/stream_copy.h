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

// all_gather's and all_to_all's outputs, assembled from every rank's piece,
// from this size. Below it the output, with the input beside it, still stays in
// the cache from one call to the next, and streaming it out makes the next
// call's writes miss (AMD EPYC Zen 5 VM, 32 MiB L3, 2 ranks reading with CMA:
// all_gather of 8.7 MiB 199-223 us plain, 326-330 streamed, 12.4 MiB 474
// against 502; all_to_all of 8 MiB 169-191 against 223-250, 11.8 MiB even);
// from about 14 MiB streaming wins (all_gather 14.7 MiB 658 against 713 us,
// 16 MiB 792-800 against 917-977; all_to_all 16.7 MiB 496-502 against 511-560).
inline constexpr size_t kStreamingGatheredOutputBytes = 16u << 20;

// Whether a gathered output of `bytes` (all_gather's, all_to_all's) is written
// with streaming stores: from kStreamingGatheredOutputBytes, except where
// large_copy uses `rep movsb` (AMD Zen 5), which copies the own piece faster
// there. 2 ranks, AMD EPYC Zen 5 VM (fifty-fourth session), streaming stores
// -> `rep movsb`, medians of five alternations: all_gather of 32, 64 and 128
// MiB 2.63 -> 2.31, 5.14 -> 4.46 and 9.96 -> 9.31 ms, all_to_all of 16 and
// 128 MiB 0.85 -> 0.79 and 10.0 -> 9.4 ms (32 and 64 MiB even); the
// thirty-seventh session, on a host of the same type where these calls took
// twice as long, had measured the other way (all_to_all of 32 MiB 3.35-3.41
// streamed, 3.49-3.61 ms). gather's root keeps streaming stores (16 and 64
// MiB: 8 % slower with `rep movsb`).
bool stream_gathered_output(size_t bytes);

}  // namespace collie::detail
