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

void RoundLog::add(const std::string& op, const std::vector<BenchRow>& collie,
                   const std::vector<BenchRow>& mpi) {
  const size_t round = rounds_[op]++;
  auto entry = [&](const BenchRow& r) -> RoundMedians& {
    RoundMedians& m = sizes_[{op, r.bytes}];
    m.collie_us.resize(round + 1, 0.0);
    m.mpi_us.resize(round + 1, 0.0);
    return m;
  };
  for (const BenchRow& r : collie) {
    if (r.op == op) entry(r).collie_us[round] = r.median_us;
  }
  for (const BenchRow& r : mpi) {
    if (r.op == op) entry(r).mpi_us[round] = r.median_us;
  }
  // Sizes of this op that neither side has this round: a zero for it too, so
  // that every size holds one entry per round.
  for (auto it = sizes_.lower_bound({op, 0}); it != sizes_.end() && it->first.first == op; ++it) {
    it->second.collie_us.resize(round + 1, 0.0);
    it->second.mpi_us.resize(round + 1, 0.0);
  }
}

size_t RoundLog::rounds(const std::string& op) const {
  auto it = rounds_.find(op);
  return it == rounds_.end() ? 0 : it->second;
}

const RoundMedians& RoundLog::of(const std::string& op, size_t bytes) const {
  static const RoundMedians kNone;
  auto it = sizes_.find({op, bytes});
  return it == sizes_.end() ? kNone : it->second;
}

std::vector<double> paired_speedups(const RoundMedians& m) {
  std::vector<double> speedups;
  const size_t n = std::min(m.collie_us.size(), m.mpi_us.size());
  for (size_t i = 0; i < n; ++i) {
    if (m.collie_us[i] > 0 && m.mpi_us[i] > 0) speedups.push_back(m.mpi_us[i] / m.collie_us[i]);
  }
  return speedups;
}

}  // namespace collie::cli
