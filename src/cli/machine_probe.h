// machine_probe.h — what `collie bench` prints about the machine before a sweep.
//
// Two numbers put a run's times in context: how fast one core copies memory
// (memcpy of 64 MiB), and how fast two cores hand data to each other (one
// process writes 256 KiB into shared memory, a second on another CPU copies it
// out, then the other way round). The second is what a staged collective does
// at every step, and on a shared virtual machine it is the one that changes: in
// some periods it drops several-fold while memcpy and the kernel's copies of
// clean data do not, and every staged collective (collie's, and OpenMPI's
// copy-in/copy-out paths) slows down with it. A run whose hand-off rate is far
// below another's was measured in such a period.
//
//   double copy = memcpy_gbps();          // e.g. 11.4
//   double handoff = handoff_gbps(cpus);  // e.g. 20.3; 0 when it cannot be measured
#pragma once

#include <vector>

namespace collie::cli {

// One core's memcpy bandwidth over 64 MiB (median of seven), in GB/s.
double memcpy_gbps();

// Bytes per second (GB/s) one core hands to another through shared memory: the
// median of three rounds of 2,000 alternating 256 KiB hand-offs between this
// process and a child pinned to the first two CPUs of `cpus`. 0 when it cannot
// be measured (fewer than two CPUs, fork failed, or the child did not answer
// within a second: it never waits longer).
double handoff_gbps(const std::vector<int>& cpus);

}  // namespace collie::cli
