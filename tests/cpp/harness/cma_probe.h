// cma_probe.h — whether this machine lets one process read another's memory
// with process_vm_readv (Cross Memory Attach), for tests whose expectations
// depend on collie taking its CMA path (src/backends/shm/cma.h).
//
//   const bool cma = cma_works_here();   // then expect the CMA path, or the staged one
#pragma once

namespace collie::testing {

// Whether a forked child can read its parent's memory here (asked once). Ranks
// are siblings, which Yama may treat differently; collie lifts that with
// PR_SET_PTRACER_ANY, so the child-parent answer is the ranks' too.
bool cma_works_here();

}  // namespace collie::testing
