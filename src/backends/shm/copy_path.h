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
// So the engine keeps staging by default and prefers single copy where the CPU
// is one of the first kind (detected by vendor: Intel). A group prefers single
// copy only if every member does (agreed at its rendezvous, with CMA), so all
// ranks choose alike. COLLIE_COPY_PATH=single|staged overrides the detection
// (auto: detect).
//
//   if (copy_path_preference() == CopyPath::kSingleCopy) { ... }
#pragma once

#include <string_view>

namespace collie::detail {

enum class CopyPath { kStaged, kSingleCopy };

// What this process prefers: COLLIE_COPY_PATH, or the CPU's vendor. Read once.
// ValueError for a COLLIE_COPY_PATH that is not auto, single or staged.
CopyPath copy_path_preference();

// The preference of a CPU whose CPUID vendor string is `vendor`
// ("GenuineIntel", "AuthenticAMD", ...; "" when unknown).
CopyPath copy_path_for_vendor(std::string_view vendor);

}  // namespace collie::detail
