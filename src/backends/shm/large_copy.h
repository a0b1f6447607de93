// large_copy: one copy of a megabyte or more, at the speed the kernel copies.
//
// glibc's memcpy copies such sizes on AMD CPUs with a loop of vector loads and
// stores: it stops using `rep movsb` above the L2 size, which was slow on Zen 3.
// On Zen 5 (family 1Ah) `rep movsb`, which process_vm_readv copies with too, is
// the faster: for the whole pieces the engine copies in one go (a rank's own
// piece of all_gather and all_to_all beside the peers' read with CMA, pieces
// and messages read from the shared arena). AMD EPYC Zen 5 VM, 2 ranks, after a
// barrier, alternating builds: all_to_all of 4 MiB 97.6-103.5 -> 92.4-96.1 us,
// of 6 MiB 182-201 -> 165-169 (OpenMPI 162-167); all_gather of 4 MiB 110-120
// -> 102-106, of 8 MiB 236-244 -> 226-230; on shared tensors send_recv of
// 2 MiB 58-59 -> 51-52, all_to_all of 4 MiB 105-108 -> 96-98. all_gather's and
// all_to_all's outputs of 16 MiB and more take it too, in one go (stream_copy.h,
// OutputCopy::kRepMovsb); other outputs of 8 MiB and more keep their streaming
// stores.
// Elsewhere large_copy is memcpy: glibc already uses `rep movsb` at these
// sizes on Intel, and no other CPU was measured.
//
// One `rep movsb` of 4 MiB or more streams on Zen 5: it copies past the cache,
// as non-temporal stores do. One core, source and destination in cache on
// huge pages, medians of 40 copies: 4,092 KiB 52 GB/s, 4,096 KiB 43 (57 and 44
// in another run), 8 MiB 42 against 56 in pieces of 2 MiB. (In some of the
// VM's phases only: an hour later 4,092 and 4,096 KiB ran alike, 58 and 56
// GB/s, and pieces cost nothing, 55 either way.) What pays off for
// an output far larger than the caches costs one that stays in them, so
// large_copy copies from kRepMovsbStreamsFrom in pieces of
// kLargeCopyPieceBytes, and large_copy_streaming in one go for outputs that
// do not stay (stream_copy.h, OutputCopy). 2 ranks, all_to_all of 8 MiB: its
// own piece of 4 MiB took 107 us in one go; the calls 236-282 -> 192-212 us
// in pieces, alternating launches (OpenMPI 197-209, which copies its own piece
// in 128 KiB pieces); all_gather of 8 MiB 225-290 -> 197-252 (OpenMPI
// 205-235); all_to_all of 9 and 10 MiB 295-332 -> 264-276 and 354-376 ->
// 324-343.
//
//   large_copy(out + at, in + at, bytes);  // from kLargeCopyBytes it pays off
#pragma once

#include <cstddef>
#include <string_view>

namespace collie::detail {

// Copies at least this large take `rep movsb` where the CPU prefers it.
inline constexpr size_t kLargeCopyBytes = 1u << 20;
// One `rep movsb` of at least this many bytes streams past the cache (Zen 5).
inline constexpr size_t kRepMovsbStreamsFrom = 4u << 20;
// large_copy's pieces from kRepMovsbStreamsFrom: each below it.
inline constexpr size_t kLargeCopyPieceBytes = 2u << 20;
static_assert(kLargeCopyPieceBytes < kRepMovsbStreamsFrom);

// The size of the pieces large_copy copies n bytes in with `rep movsb`: n
// itself (one piece) below kRepMovsbStreamsFrom, kLargeCopyPieceBytes from it.
size_t large_copy_piece_bytes(size_t n);

// memcpy(dst, src, n), with `rep movsb` from kLargeCopyBytes on CPUs where it
// is faster, in pieces that leave dst in cache (above). dst and src must not
// overlap.
void large_copy(void* dst, const void* src, size_t n);

// large_copy in one `rep movsb`, which on Zen 5 streams from
// kRepMovsbStreamsFrom: for outputs far larger than the caches. memcpy where
// large_copy is.
void large_copy_streaming(void* dst, const void* src, size_t n);

// Whether large_copy uses `rep movsb` on this CPU (read once).
bool large_copy_uses_rep_movsb();

// Whether a CPU with this CPUID vendor string and family (copy_path.h's
// cpu_vendor and cpu_family) prefers `rep movsb` for large copies: AMD family
// 1Ah and later, with Enhanced REP MOVSB (`erms`; without it the instruction
// moves a byte at a time).
bool large_copy_rep_movsb_for_cpu(std::string_view vendor, unsigned family, bool erms);

}  // namespace collie::detail
