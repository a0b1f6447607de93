// Executes a stress plan on this rank and checks every result against the
// closed-form reference (run inside a rank of collie::testing::run_ranks).
#pragma once

#include <vector>

#include "stress_plan.h"

namespace collie::stress {

struct RunStats {
  int issued = 0;   // operations this rank took part in
  int async = 0;    // of which were asynchronous
  int checked = 0;  // results compared with the reference
};

// Creates the plan's sub-groups, runs every operation whose group contains
// `world_rank`, and checks each output (throws testing::CheckFailure naming the
// operation on the first wrong result). Async handles are waited in batches.
RunStats run_plan(int world_rank, const std::vector<GroupDef>& groups,
                  const std::vector<OpSpec>& plan);

}  // namespace collie::stress
