// Differential test program: a seeded random sequence of operations (op, dtype,
// size, reduce op, root, group) over random data, identical on every run with the
// same seed and rank count. Each rank writes one line per step with a hash of its
// result to PREFIX.rank<R>.txt; compare_backends.sh runs it on shm and on mpi and
// compares the files.
//
//   usage: collie_differential PREFIX SEED STEPS
//
// Line format: "<step> <op> <dtype> <count> <group> <root> <reduces> <hash>", where
// <reduces> is 1 for reductions of floating dtypes (whose bits depend on the order
// of additions when MPI reduces natively).
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"

using namespace collie;
using collie_test::hash_tensor;
using collie_test::kAllDTypes;

namespace {

struct GroupInfo {
  std::string name;
  std::vector<int> ranks;
  int rank_of(int world) const {
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] == world) return static_cast<int>(i);
    }
    return -1;
  }
};

// Random tensor of `count` elements: floats in [-1, 1) (so sums depend on the
// order), integers over their whole range (so sums and products wrap), bools 0/1.
Tensor random_tensor(std::mt19937_64& rng, DType d, int64_t count) {
  Tensor t = Tensor::empty({count}, d);
  dispatch_dtype(d, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.data_ptr());
    std::uniform_real_distribution<float> real(-1.0f, 1.0f);
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (rng() & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        p[i] = static_cast<T>(rng());
      } else {
        p[i] = T(real(rng));
      }
    }
  });
  return t;
}

const char* const kOpNames[] = {"all_reduce", "reduce_scatter", "reduce",    "all_gather",
                                "broadcast",  "gather",         "scatter",   "all_to_all",
                                "p2p_ring",   "batch",          "async_pair"};
constexpr int kNumOps = 11;
const int64_t kCounts[] = {0, 1, 3, 17, 255, 4097, 20000, 70000};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PREFIX SEED STEPS\n", argv[0]);
    return 2;
  }
  const std::string prefix = argv[1];
  const uint64_t seed = std::strtoull(argv[2], nullptr, 10);
  const int steps = std::atoi(argv[3]);
  int rank = 0;
  try {
    init();
    rank = get_rank();
    const int n = get_group_size();
    std::vector<GroupInfo> groups;
    std::vector<int> world(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) world[static_cast<size_t>(i)] = i;
    groups.push_back({std::string(WORLD), world});
    if (n > 1) {
      groups.push_back({"rev", std::vector<int>(world.rbegin(), world.rend())});
      groups.push_back({"pair", n >= 3 ? std::vector<int>{n - 1, 1} : std::vector<int>{1, 0}});
      for (size_t g = 1; g < groups.size(); ++g) create_group(groups[g].name, groups[g].ranks);
    }
    const std::string path = prefix + ".rank" + std::to_string(rank) + ".txt";
    FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "rank %d: cannot write %s\n", rank, path.c_str());
      return 2;
    }
    std::mt19937_64 plan(seed);  // the same sequence on every rank
    for (int step = 0; step < steps; ++step) {
      const int op = static_cast<int>(plan() % kNumOps);
      const DType d = kAllDTypes[plan() % 10];
      const int64_t count = kCounts[plan() % 8];
      const ReduceOp rop = static_cast<ReduceOp>(plan() % 4);
      const GroupInfo& g = groups[plan() % groups.size()];
      const int m = static_cast<int>(g.ranks.size());
      const int root = static_cast<int>(plan() % static_cast<uint64_t>(m));
      std::vector<int64_t> splits_seed(static_cast<size_t>(m * m));
      for (auto& s : splits_seed) s = static_cast<int64_t>(plan() % 5) * (count / 4 + 1);
      const int me = g.rank_of(rank);
      if (me < 0) continue;  // not a member: the members run this step
      std::mt19937_64 data(seed * 1000003u + static_cast<uint64_t>(step) * 131u +
                           static_cast<uint64_t>(rank));
      const std::string gname = g.name == WORLD ? "world" : g.name;
      const bool reduces = is_floating(d) && (op <= 2 || op == 10);
      std::vector<Tensor> results;
      Tensor x = random_tensor(data, d, count);
      switch (op) {
        case 0:
          results.push_back(all_reduce(x, rop, g.name).first);
          break;
        case 1:
          results.push_back(
              reduce_scatter_tensor(random_tensor(data, d, count * m), rop, g.name).first);
          break;
        case 2:
          results.push_back(reduce(x, g.ranks[static_cast<size_t>(root)], rop, g.name));
          break;
        case 3:
          results.push_back(all_gather_into_tensor(x.reshape({1, count}), g.name).first);
          break;
        case 4:
          results.push_back(broadcast(x, g.ranks[static_cast<size_t>(root)], g.name));
          break;
        case 5:
          results.push_back(gather_into_tensor(x.reshape({1, count}),
                                               g.ranks[static_cast<size_t>(root)], g.name));
          break;
        case 6:
          results.push_back(scatter_tensor(random_tensor(data, d, count * m).reshape({m, count}),
                                           g.ranks[static_cast<size_t>(root)], g.name));
          break;
        case 7: {
          // splits_seed[i*m + j]: elements group rank i sends to group rank j.
          std::vector<int64_t> in_splits, out_splits;
          int64_t in_rows = 0, out_rows = 0;
          for (int j = 0; j < m; ++j) {
            in_splits.push_back(splits_seed[static_cast<size_t>(me * m + j)]);
            out_splits.push_back(splits_seed[static_cast<size_t>(j * m + me)]);
            in_rows += in_splits.back();
            out_rows += out_splits.back();
          }
          Tensor in = random_tensor(data, d, in_rows);
          results.push_back(
              all_to_all_single_with_output_shape({out_rows}, in, out_splits, in_splits, g.name)
                  .first);
          break;
        }
        case 8: {
          const int next = g.ranks[static_cast<size_t>((me + 1) % m)];
          const int prev = g.ranks[static_cast<size_t>((me + m - 1) % m)];
          CommHandle h = isend(x, next, g.name, 3);
          results.push_back(recv(x, prev, g.name, 3));
          h.wait();
          break;
        }
        case 9: {
          std::vector<P2POp> ops;
          for (int j = 0; j < m; ++j)
            ops.emplace_back("isend", random_tensor(data, d, count),
                             g.ranks[static_cast<size_t>(j)], g.name, 9);
          for (int j = 0; j < m; ++j)
            ops.emplace_back("irecv", Shape{count}, g.ranks[static_cast<size_t>(j)], g.name, 9, d);
          std::vector<Tensor> got = batch_isend_irecv(ops);
          results.insert(results.end(), got.begin() + m, got.end());
          break;
        }
        case 10: {
          Tensor y = random_tensor(data, d, count);
          auto [a, ha] = all_reduce(x, rop, g.name, true);
          auto [b, hb] = all_reduce(y, ReduceOp::SUM, g.name, true);
          hb.wait();
          ha.wait();
          results.push_back(a);
          results.push_back(b);
          break;
        }
      }
      uint64_t h = 0xcbf29ce484222325ULL;
      for (const Tensor& t : results) h = h * 31 + hash_tensor(t);
      std::fprintf(out, "%d %s %s %" PRId64 " %s %d %d %016" PRIx64 "\n", step, kOpNames[op],
                   std::string(dtype_name(d)).c_str(), count, gname.c_str(), root, reduces ? 1 : 0,
                   h);
    }
    std::fclose(out);
    barrier();
    std::printf("rank %d: backend %s, %d steps written to %s\n", rank, backend_name().c_str(),
                steps, path.c_str());
    release();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: ERROR: %s\n", rank, e.what());
    return 2;
  }
}
