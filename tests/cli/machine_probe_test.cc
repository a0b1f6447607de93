// The machine numbers `collie bench` prints: measured, never hanging, and the
// caller's CPU affinity left as it was.
#include "cli/machine_probe.h"

#include <gtest/gtest.h>
#include <sched.h>

#include "cli/cpu_binding.h"

namespace collie::cli {
namespace {

TEST(MachineProbe, MemcpyBandwidthIsMeasured) {
  const double gbps = memcpy_gbps();
  EXPECT_GT(gbps, 0.1) << "64 MiB copies at under 0.1 GB/s: the measurement is broken";
}

TEST(MachineProbe, HandoffNeedsTwoCpus) {
  EXPECT_EQ(handoff_gbps({}), 0.0);
  EXPECT_EQ(handoff_gbps({allowed_cpus().front()}), 0.0);
}

TEST(MachineProbe, HandoffBetweenTwoCpusIsMeasuredAndAffinityRestored) {
  const std::vector<int> cpus = allowed_cpus();
  const double gbps = handoff_gbps(cpus);
  if (cpus.size() >= 2) {
    EXPECT_GT(gbps, 0.01) << "1,000 turns of 256 KiB hand-offs between two CPUs did not complete";
  } else {
    EXPECT_EQ(gbps, 0.0) << "one CPU: nothing to hand over to";
  }
  EXPECT_EQ(allowed_cpus(), cpus) << "the probe pins itself while measuring, then must unpin";
}

}  // namespace
}  // namespace collie::cli
