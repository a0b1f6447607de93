// Shared tensors (collie/shared.h): every collective on empty_shared() inputs,
// every dtype, world sizes 1-4, sizes below and above the single-copy threshold
// (so both the staged and the direct path run), sub-groups, async calls, the
// arena's allocation and life cycle, and the mixed shared/private mismatch.
#include <dirent.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <thread>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

// A shared tensor holding make_tensor(shape, dtype, value)'s elements.
Tensor shared_tensor(const Shape& shape, DType dtype, const std::function<double(int64_t)>& value) {
  Tensor t = empty_shared(shape, dtype);
  RCHECK(is_shared(t)) << "empty_shared() must return a shared tensor";
  t.copy_from(make_tensor(shape, dtype, value));
  return t;
}

// 1: staged path for every dtype; 5000: direct for 4- and 8-byte dtypes only;
// 70001: direct for all but the 1-byte ones (odd, so slices are uneven).
const std::vector<int64_t>& shared_counts() {
  static const std::vector<int64_t> counts = {1, 5000, 70001};
  return counts;
}

class SharedWorld : public ::testing::TestWithParam<int> {};

TEST_P(SharedWorld, EveryCollectiveEveryDtype) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    const auto world = iota_ranks(n);
    const int root = n - 1;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t count : shared_counts()) {
        const bool async = (index++ % 2) == 1;
        const std::string what = case_name(dt, count, async);
        for (ReduceOp op : all_reduce_ops()) {
          soft.check("all_reduce " + what + " " + std::string(reduce_op_name(op)), [&] {
            Tensor x = shared_tensor({count}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
            Tensor y = finish(all_reduce(x, op, WORLD, async), async, what);
            RCHECK(is_shared(y)) << "the result of a call on shared tensors is shared";
            check_tensor(y, dt, {count}, [&](int64_t i) { return expected_reduction(dt, op, world, i); },
                         "all_reduce " + what);
            check_tensor(x, dt, {count}, [&](int64_t i) { return rank_value(dt, op, rank, i); },
                         "all_reduce input afterwards " + what);
          });
        }
        soft.check("reduce " + what, [&] {
          Tensor x = shared_tensor({count}, dt, [&](int64_t i) { return rank_value(dt, ReduceOp::MAX, rank, i); });
          Tensor y = reduce(x, root, ReduceOp::MAX);
          if (rank == root) {
            check_tensor(y, dt, {count},
                         [&](int64_t i) { return expected_reduction(dt, ReduceOp::MAX, world, i); },
                         "reduce " + what);
          } else {
            check_tensor(y, dt, {1}, [](int64_t) { return 0.0; }, "reduce placeholder " + what);
          }
        });
        soft.check("broadcast " + what, [&] {
          Tensor x = shared_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y = broadcast(x, root);
          check_tensor(y, dt, {count}, [&](int64_t i) { return pattern_value(dt, root, i); },
                       "broadcast " + what);
        });
        soft.check("all_gather " + what, [&] {
          Tensor x = shared_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y = finish(all_gather_into_tensor(x, WORLD, async), async, what);
          check_tensor(y, dt, {count * n},
                       [&](int64_t i) { return pattern_value(dt, static_cast<int>(i / count), i % count); },
                       "all_gather " + what);
        });
        soft.check("gather " + what, [&] {
          Tensor x = shared_tensor({count}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y = gather_into_tensor(x, 0);
          if (rank == 0) {
            check_tensor(y, dt, {count * n},
                         [&](int64_t i) { return pattern_value(dt, static_cast<int>(i / count), i % count); },
                         "gather " + what);
          }
        });
        soft.check("reduce_scatter " + what, [&] {
          Tensor x = shared_tensor({count * n}, dt, [&](int64_t i) { return rank_value(dt, ReduceOp::SUM, rank, i); });
          Tensor y = finish(reduce_scatter_tensor(x, ReduceOp::SUM, WORLD, async), async, what);
          check_tensor(y, dt, {count},
                       [&](int64_t i) { return expected_reduction(dt, ReduceOp::SUM, world, rank * count + i); },
                       "reduce_scatter " + what);
        });
        soft.check("scatter " + what, [&] {
          Tensor x = shared_tensor({count * n}, dt, [&](int64_t i) { return pattern_value(dt, rank, i); });
          Tensor y = scatter_tensor(x, root);
          check_tensor(y, dt, {count}, [&](int64_t i) { return pattern_value(dt, root, rank * count + i); },
                       "scatter " + what);
        });
      }
    }
    soft.finish();
  });
}

// Uneven splits: rank r sends (r + j) % 3 * rows + 1 rows to rank j (so every
// size differs and some pieces are a single row); element k of that piece is
// pattern_value(16 r + j, k). all_to_all always takes the direct path on shared
// tensors, tiny pieces included.
TEST_P(SharedWorld, AllToAllUnevenSplits) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    for (DType dt : {DType::Float32, DType::Int8, DType::Float64, DType::BFloat16}) {
      for (int64_t rows : {1, 3000}) {
        const int64_t cols = 3;
        auto piece = [&](int from, int to) { return ((from + to) % 3) * rows + 1; };
        std::vector<int64_t> in_split, out_split;
        for (int j = 0; j < n; ++j) {
          in_split.push_back(piece(rank, j));
          out_split.push_back(piece(j, rank));
        }
        const int64_t in_rows = std::accumulate(in_split.begin(), in_split.end(), int64_t{0});
        const int64_t out_rows = std::accumulate(out_split.begin(), out_split.end(), int64_t{0});
        // Element index -> (destination, offset in piece) for the input.
        std::vector<std::pair<int, int64_t>> in_map, out_map;
        for (int j = 0; j < n; ++j) {
          for (int64_t k = 0; k < in_split[j] * cols; ++k) in_map.push_back({j, k});
          for (int64_t k = 0; k < out_split[j] * cols; ++k) out_map.push_back({j, k});
        }
        const std::string what = std::string(dtype_name(dt)) + " rows=" + std::to_string(rows);
        soft.check("all_to_all " + what, [&] {
          Tensor x = shared_tensor({in_rows, cols}, dt, [&](int64_t i) {
            return pattern_value(dt, 16 * rank + in_map[i].first, in_map[i].second);
          });
          auto [y, h] = all_to_all_single_with_output_shape({out_rows, cols}, x, out_split, in_split);
          RCHECK(is_shared(y)) << "all_to_all output on shared input";
          check_tensor(y, dt, {out_rows, cols},
                       [&](int64_t i) { return pattern_value(dt, 16 * out_map[i].first + rank, out_map[i].second); },
                       "all_to_all " + what);
        });
        // The list form on the pieces of a shared tensor (read where they lie) on
        // even ranks and on separate shared tensors (read piece by piece, each
        // where it lies in the arena) on odd ranks: shared on every rank, so its
        // outputs are shared too.
        soft.check("all_to_all list " + what, [&] {
          Tensor x = shared_tensor({in_rows, cols}, dt, [&](int64_t i) {
            return pattern_value(dt, 16 * rank + in_map[i].first, in_map[i].second);
          });
          std::vector<Shape> shapes;
          for (int j = 0; j < n; ++j) shapes.push_back({out_split[j], cols});
          std::vector<Tensor> inputs = x.split(in_split);
          if (rank % 2 == 1) {
            // Odd ranks pass shared tensors of their own, which do not lie back to
            // back: every piece is shared, so the call stays shared on every rank
            // (mixing would be a mismatched call).
            for (Tensor& in : inputs) {
              Tensor own = empty_shared(in.shape(), dt);
              own.copy_from(in);
              in = own;
            }
          }
          auto [ys, h] = all_to_all_with_output_shape(shapes, inputs);
          for (int j = 0; j < n; ++j) {
            RCHECK(is_shared(ys[j])) << "all_to_all list output on shared inputs";
            check_tensor(
                ys[j], dt, shapes[j],
                [&](int64_t k) { return pattern_value(dt, 16 * j + rank, k); },
                "all_to_all list " + what + " from rank " + std::to_string(j));
          }
        });
      }
    }
    soft.finish();
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, SharedWorld, ::testing::Values(1, 2, 3, 4), world_size_name);

// Sub-groups with unsorted rank lists, and several async calls in flight at once.
TEST(Shared, SubGroupsAndAsync) {
  run_ranks(4, [](int rank) {
    const std::vector<int> odd_first = {3, 1}, even_first = {2, 0};
    const auto& mine = rank % 2 == 1 ? odd_first : even_first;
    const std::string name = rank % 2 == 1 ? "odd" : "even";
    create_group("odd", odd_first);
    create_group("even", even_first);
    const int64_t count = 100000;
    std::vector<Tensor> outs;
    std::vector<CommHandle> handles;
    for (int k = 0; k < 5; ++k) {
      Tensor x = shared_tensor({count}, DType::Float32, [&](int64_t i) { return (i % 7) + rank + k; });
      auto [y, h] = all_reduce(x, ReduceOp::SUM, name, true);
      outs.push_back(y);
      handles.push_back(h);
    }
    for (int k = 0; k < 5; ++k) {
      handles[k].wait();
      check_tensor(outs[k], DType::Float32, {count},
                   [&](int64_t i) { return 2.0 * ((i % 7) + k) + mine[0] + mine[1]; },
                   "async all_reduce on group " + name + " #" + std::to_string(k));
    }
    // A root given as a world rank, inside the unsorted sub-group.
    Tensor b = shared_tensor({count}, DType::Int32, [&](int64_t i) { return i % 1000 + rank; });
    Tensor got = broadcast(b, mine[0], name);
    check_tensor(got, DType::Int32, {count}, [&](int64_t i) { return i % 1000 + mine[0]; },
                 "broadcast from world rank " + std::to_string(mine[0]));
  });
}

// One rank passes private memory where the others pass shared tensors: a
// mismatched call, reported on every rank with who passed what.
TEST(Shared, MixingSharedAndPrivateFailsOnEveryRank) {
  run_ranks(3, [](int rank) {
    const int64_t count = 1 << 16;
    Tensor x = rank == 1 ? Tensor::ones({count}) : shared_tensor({count}, DType::Float32, [](int64_t) { return 1.0; });
    RCHECK_THROWS(all_reduce(x), CommError, "empty_shared");
  });
}

// Freed blocks are reused (same address), views of a shared tensor count as
// shared, small calls on shared tensors work (staged path), and a private
// tensor is never shared.
TEST(Shared, ArenaReusesBlocksAndRecognisesViews) {
  run_ranks(2, [](int rank) {
    void* first = nullptr;
    {
      Tensor a = empty_shared({1000, 16}, DType::Float64);
      first = a.data_ptr();
      RCHECK(is_shared(a.slice(10, 20))) << "a contiguous view of a shared tensor is shared";
      RCHECK(!is_shared(a.transpose(0, 1))) << "a non-contiguous view is not";
    }
    Tensor b = empty_shared({1000, 16}, DType::Float64);
    RCHECK_EQ(b.data_ptr(), first) << "a freed block is reused";
    RCHECK(!is_shared(Tensor::ones({1000}))) << "ordinary tensors are not shared";
    // Bigger than a chunk: gets a chunk of its own.
    Tensor big = shared_tensor({(80 << 20) / 4}, DType::Float32, [&](int64_t i) { return (i % 3) + rank; });
    auto [y, h] = all_reduce(big);
    check_tensor(y, DType::Float32, {(80 << 20) / 4}, [](int64_t i) { return 2.0 * (i % 3) + 1; },
                 "all_reduce 80 MiB");
    Tensor s = shared_tensor({3}, DType::Int64, [&](int64_t i) { return i * rank; });
    auto [z, h2] = all_reduce(s);
    check_tensor(z, DType::Int64, {3}, [](int64_t i) { return static_cast<double>(i); }, "all_reduce x3");
  });
}

// One-page blocks are kept aside for reuse when freed; before the arena grows,
// they go back and merge, so a block as large as the rest of the chunk still fits
// where they were (no second chunk).
TEST(Shared, FreedSmallBlocksAreReusedAndMergeAgainForLargeOnes) {
  run_ranks(1, [](int) {
    std::vector<Tensor> small;
    for (int i = 0; i < 300; ++i) small.push_back(empty_shared({4}, DType::Float32));
    void* lowest = small[0].data_ptr();
    for (const Tensor& t : small) lowest = std::min(lowest, t.data_ptr());
    void* freed = small[7].data_ptr();
    small[7] = Tensor();
    Tensor again = empty_shared({16}, DType::Int32);
    RCHECK_EQ(again.data_ptr(), freed) << "a freed page is the next one handed out";
    again = Tensor();
    small.clear();
    // 63.5 MiB: fits in the first chunk (64 MiB) only if the 300 pages merged again.
    Tensor large = empty_shared({(127 << 19) / 4}, DType::Float32);
    RCHECK_EQ(large.data_ptr(), lowest) << "the large block starts where the small ones were";
    Tensor one = empty_shared({2}, DType::Float64);  // a page after the large block
    RCHECK(one.data_ptr() > large.data_ptr());
    auto [y, h] = all_reduce(large.slice(0, 8));
    RCHECK_EQ(y.numel(), 8);
  });
}

// A thread keeps the one-page blocks it frees and hands them out again without
// a lock; after release() and init() those pages belong to the old arena, so
// neither that thread nor is_shared() may treat them as the new one's.
TEST(Shared, PagesKeptByAThreadDoNotOutliveTheirArena) {
  run_ranks(1, [](int) {
    std::mutex mu;
    std::condition_variable cv;
    int stage = 0;  // 1: the thread freed its page; 2: the arena was rebuilt
    void* freed_page = nullptr;
    void* second = nullptr;
    bool second_shared = false;
    std::thread worker([&] {
      Tensor page = empty_shared({4}, DType::Float32);
      freed_page = page.data_ptr();
      page = Tensor();  // kept by this thread
      Tensor again = empty_shared({4}, DType::Float32);
      RCHECK_EQ(again.data_ptr(), freed_page) << "the thread's freed page comes back first";
      again = Tensor();
      {
        std::unique_lock<std::mutex> lock(mu);
        stage = 1;
        cv.notify_all();
        cv.wait(lock, [&] { return stage == 2; });
      }
      Tensor fresh = empty_shared({4}, DType::Float32);
      second = fresh.data_ptr();
      second_shared = is_shared(fresh);
    });
    Tensor old = empty_shared({2}, DType::Int64);  // keeps the old chunk mapped
    RCHECK(is_shared(old));
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stage == 1; });
    }
    release();
    init();
    Tensor new_block = empty_shared({4}, DType::Float32);  // the new arena has a chunk
    RCHECK(!is_shared(old)) << "a block of the arena before release() is not in the new one";
    RCHECK(is_shared(new_block));
    {
      std::lock_guard<std::mutex> lock(mu);
      stage = 2;
      cv.notify_all();
    }
    worker.join();
    RCHECK(second != freed_page) << "a page kept across release() was handed out again";
    RCHECK(second_shared) << "the thread's new page is in the new arena";
    // A rejected shape takes no page (two negative sizes make a positive count,
    // an overflowing one any count).
    Tensor page = empty_shared({4}, DType::Float32);
    void* kept = page.data_ptr();
    page = Tensor();
    RCHECK_THROWS(empty_shared({-2, -2}), ValueError, "empty_shared: invalid shape");
    // A count past int64 (it wrapped to a small size before it was checked).
    RCHECK_THROWS(empty_shared({int64_t{1} << 32, int64_t{1} << 32, 4}), ValueError,
                  "has too many elements");
    // A count that fits but whose bytes wrap (2^65 bytes of float64).
    RCHECK_THROWS(empty_shared({int64_t{1} << 62}, DType::Float64), ValueError,
                  "has too many elements");
    RCHECK_EQ(empty_shared({4}, DType::Float32).data_ptr(), kept) << "the kept page is still free";
    Tensor x = empty_shared({3}, DType::Float32);
    RCHECK(is_shared(x));
    auto [y, h] = all_reduce(x);
    RCHECK_EQ(y.numel(), 3);
  });
}

// No arena segment of this rank survives its release(), and shared tensors stay valid.
TEST(Shared, ReleaseUnlinksChunksAndTensorsLiveOn) {
  run_ranks(2, [](int rank) {
    Tensor x = shared_tensor({5000}, DType::Int32, [&](int64_t i) { return i + rank; });
    auto [y, h] = all_reduce(x);
    release();
    check_tensor(y, DType::Int32, {5000}, [](int64_t i) { return 2.0 * i + 1; }, "result after release");
    const char* job = std::getenv("COLLIE_JOB_ID");
    RCHECK(job != nullptr);
    const std::string needle = std::string("-") + job + "-arena";
    DIR* d = opendir("/dev/shm");
    RCHECK(d != nullptr);
    std::string found;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      const std::string own = "-" + std::to_string(rank);  // this rank's chunks only
      if (name.find(needle) != std::string::npos &&
          name.compare(name.size() - own.size(), own.size(), own) == 0) {
        found += " " + name;
      }
    }
    closedir(d);
    RCHECK(found.empty()) << "arena segments left after release:" << found;
    RCHECK_THROWS(empty_shared({4}), RuntimeError, "init()");
    init();  // the harness releases at the end
  });
}

TEST(Shared, EmptySharedBeforeInitIsARuntimeError) {
  EXPECT_THROW(empty_shared({4}), RuntimeError);
  EXPECT_FALSE(is_shared(Tensor::ones({4})));
}

}  // namespace
}  // namespace collie::testing
