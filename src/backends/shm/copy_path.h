// copy_path.h — which way this CPU moves mid-sized and large data between ranks
// faster: one copy through the kernel (CMA, reading the peer's tensor) or two
// through shared slots and rings (staging, both cores copying at once).
//
// It is a property of the machine, not of the code, and the two machines this
// project has been measured on disagree (docs/performance.md, 2 ranks):
//   - Intel Xeon VM, 2 MiB L2 per core: a core reads another's clean data at
//     25-30 GB/s and freshly written data at ~12 GB/s through CMA, but data
//     handed over through shared memory (written by one core, read by the
//     other) at ~9 GB/s. Single copy wins: send_recv of 512 KiB staged 0.34x
//     OpenMPI, read with CMA 1.0x; all_to_all of 4 MiB 0.82x against 1.01x.
//   - AMD EPYC VM (earlier sessions): staging won for p2p messages up to the
//     ring (2 ranks, 4 MiB: 0.30 ms staged, 0.50 ms pulled) and for all_to_all
//     pieces from 512 KiB (1 MiB: 48 against 66 us).
//   - AMD EPYC VM (Zen 4, twentieth session): staging still wins below 1 MiB
//     and on 4 KiB pages, but for large data on huge pages process_vm_readv
//     wins by a third (its cost is pinning pages, 4 KiB at a time), so staged
//     groups read large p2p messages and all_to_all pieces with CMA when the
//     sender's data lies on huge pages (huge_page_probe.h).
//   - AMD EPYC VM (Zen 5, family 1Ah, thirty-first session): one copy wins from
//     about 128 KiB on any pages (2 ranks, all_reduce of 2 MiB: 243 us staged,
//     104 with CMA, OpenMPI 216; all_gather of 16 MiB 969 against 519), but a
//     process_vm_readv costs some 3.5 us more than on Intel, so below 128 KiB
//     the slots win (all_gather of 16 KiB: 1.7 against 5.1 us). Such CPUs are
//     hybrid: single copy from kHybridSingleCopyMinBytes per transfer, the
//     staged thresholds below it.
// So the engine stages by default, prefers single copies where the CPU is of
// the first kind (detected by vendor: Intel), and is hybrid on AMD family 1Ah
// and later. A group takes the most cautious preference of its members (agreed
// at its rendezvous, with CMA), so all ranks choose alike.
// COLLIE_COPY_PATH=single|hybrid|staged overrides the detection (auto: detect).
//
//   if (copy_path_preference() == CopyPath::kSingleCopy) { ... }
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/cpu_id.h"  // cpu_vendor, cpu_family: what the preference is chosen by

namespace collie::detail {

// In order of caution: a group whose members differ takes the lowest.
enum class CopyPath { kStaged, kHybrid, kSingleCopy };

// Where a group is hybrid, no transfer smaller than this (bytes per rank, per
// message or per all_to_all piece) takes a single-copy rule; larger ones follow
// the kSingleCopy rules. With more ranks than CPUs, where a read waits for its
// owner to be scheduled, hybrid groups pull p2p messages and read all_to_all
// pieces as staged ones do (AMD Zen 5, 4 ranks on 2 cores: send_recv of 256 KiB
// 43-50 us pulled from 128 KiB, 18-21 streamed; all_to_all of 2 MiB, 512 KiB
// pieces, 205-231 us staged, 148-161 read with CMA) and broadcast as single
// ones (2-8 MiB, one read per non-root: 119-563 against 221-1039 us).
inline constexpr size_t kHybridSingleCopyMinBytes = 128u << 10;

// What this process prefers: COLLIE_COPY_PATH, or the CPU. Read once.
// ValueError for a COLLIE_COPY_PATH that is not auto, single, hybrid or staged.
CopyPath copy_path_preference();

// "staged", "hybrid" or "single".
const char* copy_path_name(CopyPath path);

// The preference and where it comes from, for people (`collie info`, `collie
// bench`): "hybrid (AuthenticAMD family 0x1a)", "single (COLLIE_COPY_PATH)".
// A group may still stage: its most cautious member decides, and a group
// without CMA stages. ValueError as copy_path_preference().
std::string describe_copy_path_preference();

// The preference of a CPU whose CPUID vendor string is `vendor`
// ("GenuineIntel", "AuthenticAMD", ...; "" when unknown) and whose family
// (base plus extended, as the vendors number them: Zen 4 is 0x19, Zen 5 0x1A;
// 0 when unknown) is `family`.
CopyPath copy_path_for_cpu(std::string_view vendor, unsigned family);

}  // namespace collie::detail
