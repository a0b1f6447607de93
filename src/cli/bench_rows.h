// The rows `collie bench` collects from its workers, and how the rounds of a
// sweep (`--rounds N`) combine: one row per size (the best round of each side)
// and, against OpenMPI, each round's speed-up.
//
//   std::vector<BenchRow> best;
//   RoundLog rounds;
//   for (each round) {
//     for (const BenchRow& r : collie_round) keep_best(best, r);
//     rounds.add("all_reduce", collie_round, mpi_round);
//   }
//   std::vector<double> s = paired_speedups(rounds.of("all_reduce", 8));
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
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

// One size's median on each side in every round, in round order; 0 where a
// side has no row for the size that round (its worker failed before it).
struct RoundMedians {
  std::vector<double> collie_us, mpi_us;
};

// Every round of a comparison with OpenMPI, by op and size. The best of each
// side (keep_best) may come from rounds minutes apart, on a machine whose speed
// changes from one minute to the next; the two sides of one round ran within
// seconds of each other, so each round's ratio is a paired one, and their spread
// shows how far a speed-up moves with the machine.
class RoundLog {
 public:
  // Records the next round of `op` from each side's rows (rows of other ops
  // are not looked at). A size either side lacks gets 0 on that side, in this
  // round and, for a size first seen now, in the rounds before.
  void add(const std::string& op, const std::vector<BenchRow>& collie,
           const std::vector<BenchRow>& mpi);
  // The rounds of (op, bytes); empty when none was recorded.
  const RoundMedians& of(const std::string& op, size_t bytes) const;
  // How many rounds of `op` were recorded.
  size_t rounds(const std::string& op) const;

 private:
  std::map<std::pair<std::string, size_t>, RoundMedians> sizes_;
  std::map<std::string, size_t> rounds_;
};

// Each round's speed-up (OpenMPI's median / collie's), in round order, for the
// rounds where both sides have a positive median.
std::vector<double> paired_speedups(const RoundMedians& m);

}  // namespace collie::cli
