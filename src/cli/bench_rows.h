// The rows `collie bench` collects from its workers, and how the rounds of a
// sweep (`--rounds N`) combine into one row per size.
//
//   std::vector<BenchRow> best;
//   for (const BenchRow& r : one_round) keep_best(best, r);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace collie::cli {

// One size of one op, as a worker's RESULT line gives it: times in microseconds
// (median, min and max over ranks) and "ok" or "FAIL" for the result check.
struct BenchRow {
  std::string op;
  size_t bytes = 0;
  double median_us = 0, min_us = 0, max_us = 0;
  std::string check;
};

// Merges `r` into `best` (rows of one op, by size, in sweep order): a size not
// there yet is appended; otherwise the row with the lower median is kept, and a
// wrong result in any round leaves the size marked FAIL.
void keep_best(std::vector<BenchRow>& best, const BenchRow& r);

}  // namespace collie::cli
