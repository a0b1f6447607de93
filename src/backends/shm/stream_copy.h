// stream_copy: memcpy with non-temporal stores, for outputs far larger than the caches.
//
// A normal store to a line not in cache first reads it (read-for-ownership), so
// writing a 64 MiB output costs 128 MiB of memory traffic. Streaming stores skip
// the read and keep the output from evicting the staging slots, which peers are
// about to read. Only worth it for large outputs: small ones are read back soon.
// copy_output writes an output as its op chose (OutputCopy): kept in cache
// (large_copy), past it in one `rep movsb` (large_copy_streaming, Zen 5) or with
// streaming stores.
//
//   copy_output(out + at, in + at, bytes, gathered_output_copy(out_bytes));
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

// Messages read from the shared arena (send_recv of shared tensors), from this
// size, in one `rep movsb` (large_copy_streaming) instead of large_copy's
// pieces. 2 ranks, AMD EPYC Zen 5 VM, alternating launches, one `rep movsb`
// against pieces (us): 6 MiB 156-160 against 129-130, 8 MiB 210-215 against
// 177-178, 10 MiB 293-295 against 258-260, 12 MiB 342-354 against 341-389,
// 16 MiB 734-967 against 946-1,029.
inline constexpr size_t kStreamingMessageBytes = 12u << 20;

// How a call writes a large output it assembles from whole pieces.
enum class OutputCopy {
  kCached,     // large_copy: the output stays in cache for the next call
  kRepMovsb,   // large_copy_streaming: one `rep movsb`, which streams on Zen 5
  kStreaming,  // stream_copy: non-temporal stores
};

// How all_gather and all_to_all write a gathered output of `bytes`: kCached
// below kStreamingGatheredOutputBytes; from it kRepMovsb where large_copy uses
// `rep movsb` (AMD Zen 5), which copies the own piece faster there, else
// kStreaming. 2 ranks, AMD EPYC Zen 5 VM (fifty-fourth session), streaming
// stores -> `rep movsb`, medians of five alternations: all_gather of 32, 64
// and 128 MiB 2.63 -> 2.31, 5.14 -> 4.46 and 9.96 -> 9.31 ms, all_to_all of
// 16 and 128 MiB 0.85 -> 0.79 and 10.0 -> 9.4 ms (32 and 64 MiB even); the
// thirty-seventh session, on a host of the same type where these calls took
// twice as long, had measured the other way (all_to_all of 32 MiB 3.35-3.41
// streamed, 3.49-3.61 ms). In large_copy's pieces instead of one `rep movsb`
// (fifty-eighth session), 2 ranks' all_to_all and all_gather of 16 to 64 MiB
// came out even or slower, and 4 ranks' all_to_all of 16 MiB, whose own piece
// is 4 MiB, 1,799-2,096 -> 1,848-2,211 us in seven alternations. gather's root
// keeps streaming stores (16 and 64 MiB: 8 % slower with `rep movsb`).
OutputCopy gathered_output_copy(size_t bytes);

// Copies n bytes into an output as `how` says.
void copy_output(void* dst, const void* src, size_t n, OutputCopy how);

}  // namespace collie::detail
