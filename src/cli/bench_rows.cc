#include "cli/bench_rows.h"

#include <algorithm>

namespace collie::cli {

void keep_best(std::vector<BenchRow>& best, const BenchRow& r) {
  auto it = std::find_if(best.begin(), best.end(),
                         [&](const BenchRow& b) { return b.op == r.op && b.bytes == r.bytes; });
  if (it == best.end()) {
    best.push_back(r);
    return;
  }
  const bool failed = it->check == "FAIL" || r.check == "FAIL";
  if (r.median_us < it->median_us) *it = r;
  if (failed) it->check = "FAIL";
}

}  // namespace collie::cli
