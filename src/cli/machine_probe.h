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
//   double copy = memcpy_gbps();          // e.g. 11.4
//   double handoff = handoff_gbps(cpus);  // e.g. 20.3; 0 when it cannot be measured
#pragma once

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

}  // namespace collie::cli
