#include "stress_plan.h"

#include <random>

#include "values.h"

namespace collie::stress {

std::vector<GroupDef> stress_groups(int world_size) {
  std::vector<GroupDef> g = {{std::string(WORLD), testing::iota_ranks(world_size)}};
  if (world_size == 4) {
    g.push_back({"s01", {0, 1}});
    g.push_back({"s32", {3, 2}});        // group rank order differs from world order
    g.push_back({"s031", {0, 3, 1}});
    g.push_back({"s21", {2, 1}});
    g.push_back({"s2", {2}});            // a group of one
    g.push_back({"s3120", {3, 1, 2, 0}});  // the whole world, permuted
  }
  return g;
}

const char* kind_name(Kind k) {
  static const char* const names[] = {
      "all_reduce", "all_gather",   "reduce_scatter", "reduce",     "broadcast",
      "gather",     "scatter",      "barrier",        "send_recv",  "batch_ring",
      "all_to_all_single", "all_to_all_list", "all_to_all_v_c"};
  return names[static_cast<int>(k)];
}

std::string OpSpec::describe(const std::vector<GroupDef>& groups) const {
  std::string s = "#" + std::to_string(index) + " " + kind_name(kind);
  if (kind == Kind::AllReduce || kind == Kind::ReduceScatter || kind == Kind::Reduce) {
    s += "(" + std::string(reduce_op_name(op)) + ")";
  }
  s += " " + std::string(dtype_name(dtype)) + " [" + std::to_string(rows) + "x" +
       std::to_string(cols) + "] root " + std::to_string(root) + " group '" +
       groups[static_cast<size_t>(group)].name + "'" + (async ? " async" : "");
  return s;
}

namespace {

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int64_t between(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(between(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  std::mt19937_64 rng_;
};

// Elements per rank: mostly a few hundred, 25% up to 16K (several 16 KiB slots in
// any dtype), 3% up to 100K.
int64_t draw_elements(Draw& d) {
  double p = static_cast<double>(d.between(0, 99));
  if (p < 72) return d.between(0, 600);
  if (p < 97) return d.between(600, 16000);
  return d.between(16000, 100000);
}

}  // namespace

std::vector<OpSpec> make_plan(uint64_t seed, int count, const std::vector<GroupDef>& groups,
                              int64_t scale) {
  Draw d(seed);
  const std::vector<int64_t> col_choices = {1, 3, 17, 64};
  std::vector<OpSpec> plan;
  plan.reserve(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k) {
    OpSpec s;
    s.index = k;
    s.kind = static_cast<Kind>(d.between(0, static_cast<int>(Kind::kCount) - 1));
    s.group = static_cast<int>(d.between(0, static_cast<int64_t>(groups.size()) - 1));
    const int n = static_cast<int>(groups[static_cast<size_t>(s.group)].ranks.size());
    s.dtype = d.pick(testing::all_dtypes());
    s.op = d.pick(testing::all_reduce_ops());
    s.cols = d.pick(col_choices);
    s.rows = draw_elements(d) * scale / s.cols;
    s.root = static_cast<int>(d.between(0, n - 1));
    s.peer = static_cast<int>(d.between(0, n - 1));  // may equal root: a send to oneself
    s.async = d.chance(0.35);
    s.key = d.between(0, 1 << 20);
    if (s.kind == Kind::AllToAllSingle || s.kind == Kind::AllToAllList ||
        s.kind == Kind::AllToAllVC) {
      // Rows per pair, zeros included; a rank's total stays near the drawn size.
      const int64_t per_pair = std::max<int64_t>(1, s.rows / n);
      s.splits.resize(static_cast<size_t>(n) * static_cast<size_t>(n));
      for (auto& v : s.splits) v = d.chance(0.15) ? 0 : d.between(0, per_pair);
    }
    plan.push_back(std::move(s));
  }
  return plan;
}

}  // namespace collie::stress
