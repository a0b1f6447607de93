// cpu_binding.h — which CPU each rank of `collie run` is bound to.
//
// Like mpirun's default (--bind-to core), ranks of a job that fills most of the
// machine are pinned, one per CPU: a rank that migrates leaves its caches behind,
// and two ranks that the scheduler puts on one CPU while another idles turn every
// spin-wait into a wait for a time slice (seen as 10x slower small collectives,
// now and then, with 2 ranks on 2 CPUs). Unlike mpirun, a job that takes half
// the CPUs or fewer is not pinned, so that several such jobs (parallel tests, say)
// spread over a large machine instead of all stacking on its first CPUs. More
// ranks than CPUs are pinned round robin (left to the scheduler, 4 ranks on 2
// CPUs ran small collectives 1.7x slower in about half of the launches).
//
//   std::vector<int> cpus = allowed_cpus();              // e.g. {0, 1}
//   int cpu = cpu_for_rank(BindPolicy::kAuto, r, n, cpus);
//   if (cpu >= 0) bind_to_cpu(cpu);                      // in the rank, before exec
#pragma once

#include <string>
#include <vector>

namespace collie::cli {

enum class BindPolicy {
  kAuto,  // core when ranks > CPUs / 2 (and ranks >= 2), else none (the default)
  kCore,  // rank r on the r-th allowed CPU, wrapping around when ranks > CPUs
  kNone,  // no binding
};

// "auto" / "core" / "none" -> policy; false for anything else.
bool parse_bind_policy(const std::string& text, BindPolicy* policy);

// The CPUs this process may run on (its affinity mask), in increasing order.
std::vector<int> allowed_cpus();

// The CPU rank `rank` of `nprocs` is bound to under `policy`, or -1 for none.
int cpu_for_rank(BindPolicy policy, int rank, int nprocs, const std::vector<int>& cpus);

// Binds the calling process to `cpu`; false (errno set) if the kernel refused.
bool bind_to_cpu(int cpu);

}  // namespace collie::cli
