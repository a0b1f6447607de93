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
// all_to_all's outputs of 16 MiB and more take it too (stream_copy.h,
// stream_gathered_output); other outputs of 8 MiB and more keep their
// streaming stores.
// Elsewhere large_copy is memcpy: glibc already uses `rep movsb` at these
// sizes on Intel, and no other CPU was measured.
//
//   large_copy(out + at, in + at, bytes);  // from kLargeCopyBytes it pays off
#pragma once

#include <cstddef>
#include <string_view>

namespace collie::detail {

// Copies at least this large take `rep movsb` where the CPU prefers it.
inline constexpr size_t kLargeCopyBytes = 1u << 20;

// memcpy(dst, src, n), with `rep movsb` from kLargeCopyBytes on CPUs where it
// is faster (above). dst and src must not overlap.
void large_copy(void* dst, const void* src, size_t n);

// Whether large_copy uses `rep movsb` on this CPU (read once).
bool large_copy_uses_rep_movsb();

// Whether a CPU with this CPUID vendor string and family (copy_path.h's
// cpu_vendor and cpu_family) prefers `rep movsb` for large copies: AMD family
// 1Ah and later, with Enhanced REP MOVSB (`erms`; without it the instruction
// moves a byte at a time).
bool large_copy_rep_movsb_for_cpu(std::string_view vendor, unsigned family, bool erms);

}  // namespace collie::detail
