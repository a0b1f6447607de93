// machine_probe.h — what `collie bench` prints about the machine before a sweep.
//
// Two numbers put a run's times in context: how fast one core copies memory
// (memcpy of 64 MiB), and how fast two cores hand data to each other: two
// processes on two CPUs each write 256 KiB into shared memory, then each copies
// the other's out, over and over (both directions at once, as in a collective
// step). The second is what a staged collective does at every step, and on a
// shared virtual machine it is the one that changes: in some periods it drops
// about 3.5-fold (6.5 -> 1.9 GB/s each way on the 2-core machines) while memcpy
// does not, and every collective that hands freshly written data between cores
// (collie's slots, OpenMPI's copy-in/copy-out) slows down with it. Compare runs
// only at similar hand-off rates.
//
// The CPU's model and cache sizes go with them: the same code has different
// strengths on different machines (a CPU whose cores read each other's clean
// data fast favours single-copy reads over staging). So does the kernel's mode
// of transparent huge pages: large copies run faster on huge pages, which
// collie's large tensors and the OpenMPI worker's buffers ask for (`madvise`),
// and which a kernel set to `never` refuses.
//
//   double copy = memcpy_gbps();          // e.g. 11.4
//   double handoff = handoff_gbps(cpus);  // e.g. 20.3; 0 when it cannot be measured
//   std::string cpu = cpu_summary();      // e.g. "AMD EPYC 7B13, L2 512K, L3 32768K"
//   std::string thp = huge_page_mode();   // e.g. "madvise"
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace collie::cli {

// One core's memcpy bandwidth over 64 MiB (median of seven), in GB/s.
double memcpy_gbps();

// Bytes per second (GB/s) handed each way between two cores through shared
// memory: the median of three rounds of 1,000 turns (256 KiB each way per turn)
// between this process and a child, pinned to the first two CPUs of `cpus`. 0 when it cannot
// be measured (fewer than two CPUs, fork failed, or the child did not answer
// within a second: it never waits longer).
double handoff_gbps(const std::vector<int>& cpus);

// The first "model name" of /proc/cpuinfo text, or "" if it has none.
std::string cpu_model_name(std::string_view cpuinfo);

// "<model name>, L2 <size>, L3 <size>" for CPU 0 (/proc/cpuinfo and sysfs; the
// parts it cannot read are left out, "unknown CPU" if all are).
std::string cpu_summary();

// The selected word of /sys/kernel/mm/transparent_hugepage/enabled text
// ("always [madvise] never" -> "madvise"), or "" if none is selected.
std::string selected_mode(std::string_view sysfs_text);

// The kernel's transparent-huge-page mode ("always", "madvise", "never"), or
// "unknown" where sysfs does not say.
std::string huge_page_mode();

}  // namespace collie::cli
