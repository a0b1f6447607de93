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

TEST(MachineProbe, CpuModelNameIsTheFirstModelNameLine) {
  EXPECT_EQ(cpu_model_name("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) "
                           "Xeon(R) Processor  \nmodel name\t: second\n"),
            "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(cpu_model_name("model name:AMD EPYC 7B13"), "AMD EPYC 7B13");  // no newline at the end
  EXPECT_EQ(cpu_model_name("processor : 0\nmodel\t: 1\n"), "");  // "model" alone is not it
  EXPECT_EQ(cpu_model_name(""), "");
}

TEST(MachineProbe, SelectedModeIsTheBracketedWord) {
  EXPECT_EQ(selected_mode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(selected_mode("[always] madvise never"), "always");
  EXPECT_EQ(selected_mode("always defer defer+madvise [madvise] never"), "madvise");
  EXPECT_EQ(selected_mode("always madvise never"), "");
  EXPECT_EQ(selected_mode("[unterminated"), "");
  EXPECT_EQ(selected_mode(""), "");
  const std::string mode = huge_page_mode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unknown")
      << mode;
}

TEST(MachineProbe, CpuSummaryIsNeverEmpty) {
  const std::string summary = cpu_summary();
  EXPECT_FALSE(summary.empty());
  EXPECT_EQ(summary.find('\n'), std::string::npos) << summary;
}

}  // namespace
}  // namespace collie::cli
