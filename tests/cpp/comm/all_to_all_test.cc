// The all-to-all family: all_to_all_with_output_shape (lists), all_to_all_single_with_
// output_shape (equal and uneven splits, split sizes taken from the INPUT's own shape),
// all_to_all_v_c (a count matrix with zeros). Every dtype, world sizes 1-4, sub-groups,
// async, and the TypeErrors/ValueErrors/CommErrors of the header.
#include <functional>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

// Rows that group rank `src` sends to group rank `dst` in the uneven tests (zeros included).
int64_t rows_between(int src, int dst) { return (src + 2 * dst) % 3; }
// A distinct data key per (source, destination) pair.
int pair_key(int src, int dst) { return src * 8 + dst; }

// all_to_all_single_with_output_shape where group rank `src` sends
// elements(src, dst) elements to `dst` (element i of a piece holds
// pattern_value(dt, pair_key(src, dst), i)); checks everything `rank` receives.
void check_uneven_all_to_all(int rank, int n, DType dt,
                             const std::function<int64_t(int, int)>& elements,
                             const std::string& what) {
  std::vector<int64_t> in_split, out_split;
  std::vector<Tensor> parts;
  int64_t received = 0;
  for (int peer = 0; peer < n; ++peer) {
    in_split.push_back(elements(rank, peer));
    out_split.push_back(elements(peer, rank));
    received += out_split.back();
    parts.push_back(make_tensor({in_split.back()}, dt, [&](int64_t i) {
      return pattern_value(dt, pair_key(rank, peer), i);
    }));
  }
  Tensor x = Tensor::cat(parts);
  auto [y, h] = all_to_all_single_with_output_shape({received}, x, out_split, in_split);
  std::vector<double> expected;
  for (int src = 0; src < n; ++src) {
    for (int64_t i = 0; i < out_split[static_cast<size_t>(src)]; ++i) {
      expected.push_back(pattern_value(dt, pair_key(src, rank), i));
    }
  }
  check_tensor(
      y, dt, {received}, [&](int64_t i) { return expected[static_cast<size_t>(i)]; }, what);
}

class AllToAllWorld : public ::testing::TestWithParam<int> {};

TEST_P(AllToAllWorld, WithOutputShapeEveryDtype) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t scale : {int64_t{1}, int64_t{700}}) {
        const bool async = (index++ % 2) == 1;
        const std::string what = "all_to_all_with_output_shape " + case_name(dt, scale, async);
        soft.check(what, [&] {
          std::vector<Tensor> inputs;
          std::vector<Shape> output_shapes;
          for (int peer = 0; peer < n; ++peer) {
            // To peer: [rows_between(rank, peer) * scale, 2]; shapes differ per pair.
            inputs.push_back(make_tensor({rows_between(rank, peer) * scale, 2}, dt,
                                         [&](int64_t i) { return pattern_value(dt, pair_key(rank, peer), i); }));
            output_shapes.push_back({rows_between(peer, rank) * scale, 2});
          }
          auto [outputs, handle] = all_to_all_with_output_shape(output_shapes, inputs, WORLD, async);
          if (async) {
            RCHECK(static_cast<bool>(handle)) << what;
            handle.wait();
          } else {
            RCHECK(!handle) << what;
          }
          RCHECK_EQ(outputs.size(), static_cast<size_t>(n)) << what;
          for (int peer = 0; peer < n; ++peer) {
            check_tensor(outputs[static_cast<size_t>(peer)], dt, output_shapes[static_cast<size_t>(peer)],
                         [&](int64_t i) { return pattern_value(dt, pair_key(peer, rank), i); },
                         what + " from rank " + std::to_string(peer));
          }
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

// The list form's inputs in every arrangement ListInput tells apart: views of
// one tensor back to back (one packed input, zero-sized pieces among them),
// pieces of one buffer that are separate tensors (back to back too), views out of
// order (read piece by piece) and non-contiguous views (each copied on its own,
// then read piece by piece); and its outputs as rows of one width (sliced) or of
// other shapes (reshaped). Asynchronous calls drop every reference to their
// inputs before waiting.
TEST_P(AllToAllWorld, WithOutputShapeInputsAsViews) {
  const int n = GetParam();
  run_ranks(
      n,
      [n](int rank) {
        SoftChecks soft;
        const DType dt = DType::Float32;
        auto rows_to = [&](int peer) { return rows_between(rank, peer) * 3; };
        auto rows_from = [&](int peer) { return rows_between(peer, rank) * 3; };
        auto piece_to = [&](int peer) {
          return make_tensor({rows_to(peer), 2}, dt,
                             [&](int64_t i) { return pattern_value(dt, pair_key(rank, peer), i); });
        };
        // Output shapes: [rows, 2] (one width), or [rows * 2] for odd peers (mixed).
        auto output_shapes = [&](bool mixed) {
          std::vector<Shape> shapes;
          for (int peer = 0; peer < n; ++peer) {
            shapes.push_back(mixed && peer % 2 == 1 ? Shape{rows_from(peer) * 2}
                                                    : Shape{rows_from(peer), 2});
          }
          return shapes;
        };
        auto run = [&](const std::string& what, std::function<std::vector<Tensor>()> make_inputs,
                       bool mixed, bool async) {
          soft.check(what, [&] {
            const std::vector<Shape> shapes = output_shapes(mixed);
            auto [outputs, handle] =
                all_to_all_with_output_shape(shapes, make_inputs(), WORLD, async);
            if (async) handle.wait();  // the inputs are gone: the call keeps what it reads alive
            RCHECK_EQ(outputs.size(), static_cast<size_t>(n)) << what;
            for (int peer = 0; peer < n; ++peer) {
              check_tensor(
                  outputs[static_cast<size_t>(peer)], dt, shapes[static_cast<size_t>(peer)],
                  [&](int64_t i) { return pattern_value(dt, pair_key(peer, rank), i); },
                  what + " from rank " + std::to_string(peer));
            }
          });
        };
        auto split_of_one_tensor = [&] {
          std::vector<Tensor> pieces;
          std::vector<int64_t> rows;
          for (int peer = 0; peer < n; ++peer) {
            pieces.push_back(piece_to(peer));
            rows.push_back(rows_to(peer));
          }
          return Tensor::cat(pieces).split(rows);
        };
        auto separate_tensors_back_to_back = [&] {
          // One buffer, shared by the pieces' deleters; each piece is its own tensor.
          int64_t total = 0;
          for (int peer = 0; peer < n; ++peer) total += rows_to(peer) * 2;
          auto buffer = std::make_shared<std::vector<float>>(
              static_cast<size_t>(std::max<int64_t>(total, 1)));
          std::vector<Tensor> pieces;
          int64_t at = 0;
          for (int peer = 0; peer < n; ++peer) {
            Tensor piece = Tensor::from_blob(buffer->data() + at, {rows_to(peer), 2}, dt, {},
                                             [buffer](void*) {});
            piece.copy_from(piece_to(peer));
            pieces.push_back(piece);
            at += rows_to(peer) * 2;
          }
          return pieces;
        };
        auto views_out_of_order = [&] {
          std::vector<Tensor> reversed;
          std::vector<int64_t> rows;
          for (int peer = n - 1; peer >= 0; --peer) {
            reversed.push_back(piece_to(peer));
            rows.push_back(rows_to(peer));
          }
          std::vector<Tensor> views = Tensor::cat(reversed).split(rows);
          return std::vector<Tensor>(views.rbegin(), views.rend());
        };
        auto non_contiguous_views = [&] {
          std::vector<Tensor> pieces;
          for (int peer = 0; peer < n; ++peer) {
            // [2, rows] transposed: element (r, c) of the view is element c * rows + r here.
            const int64_t r = rows_to(peer);
            pieces.push_back(make_tensor({2, r}, dt, [&](int64_t j) {
                               return pattern_value(dt, pair_key(rank, peer), (j % r) * 2 + j / r);
                             }).transpose(0, 1));
          }
          return pieces;
        };
        int index = 0;
        for (bool mixed : {false, true}) {
          const std::string shapes = mixed ? " mixed shapes" : " rows";
          for (bool async : {false, true}) {
            const std::string mode =
                (async ? " async" : "") + shapes + " #" + std::to_string(index++);
            run("split of one tensor" + mode, split_of_one_tensor, mixed, async);
            run("separate tensors back to back" + mode, separate_tensors_back_to_back, mixed,
                async);
            run("views out of order" + mode, views_out_of_order, mixed, async);
            run("non-contiguous views" + mode, non_contiguous_views, mixed, async);
          }
        }
        soft.finish();
      },
      small_chunks());
}

TEST_P(AllToAllWorld, SingleEqualSplitsEveryDtype) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t rows_per_peer : element_counts()) {
        const bool async = (index++ % 2) == 0;
        const std::string what = "all_to_all_single equal " + case_name(dt, rows_per_peer, async);
        soft.check(what, [&] {
          // Row block j of rank r's input goes to rank j: element i of block j = pattern(r*8+j, i).
          const int64_t block = rows_per_peer * 3;
          Tensor x = make_tensor({rows_per_peer * n, 3}, dt, [&](int64_t i) {
            return pattern_value(dt, pair_key(rank, static_cast<int>(i / std::max<int64_t>(block, 1))),
                                 i % std::max<int64_t>(block, 1));
          });
          Tensor y = finish(all_to_all_single_with_output_shape({rows_per_peer * n, 3}, x, {}, {}, WORLD, async),
                            async, what);
          check_tensor(y, dt, {rows_per_peer * n, 3}, [&](int64_t i) {
            return pattern_value(dt, pair_key(static_cast<int>(i / block), rank), i % block);
          }, what);
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

TEST_P(AllToAllWorld, SingleUnevenSplitsEveryDtype) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    for (DType dt : all_dtypes()) {
      for (int64_t scale : {int64_t{1}, int64_t{900}}) {
        const std::string what = "all_to_all_single uneven " + case_name(dt, scale, false);
        soft.check(what, [&] {
          std::vector<int64_t> in_split, out_split;
          std::vector<Tensor> parts;
          int64_t out_rows = 0;
          for (int peer = 0; peer < n; ++peer) {
            in_split.push_back(rows_between(rank, peer) * scale);
            out_split.push_back(rows_between(peer, rank) * scale);
            out_rows += out_split.back();
            parts.push_back(make_tensor({in_split.back(), 2}, dt,
                                        [&](int64_t i) { return pattern_value(dt, pair_key(rank, peer), i); }));
          }
          Tensor x = Tensor::cat(parts);
          auto [y, h] = all_to_all_single_with_output_shape({out_rows, 2}, x, out_split, in_split);
          // Expected: blocks from rank 0, 1, ... of out_split[i] rows.
          std::vector<double> expected;
          for (int src = 0; src < n; ++src) {
            for (int64_t i = 0; i < out_split[static_cast<size_t>(src)] * 2; ++i) {
              expected.push_back(pattern_value(dt, pair_key(src, rank), i));
            }
          }
          check_tensor(y, dt, {out_rows, 2}, [&](int64_t i) { return expected[static_cast<size_t>(i)]; }, what);
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

// Senders whose pieces all fit step 0 and senders whose pieces take several
// steps (4 KiB slots) in one call: rank 0 sends 1-3 elements to each peer, the
// others hundreds, so the receivers take rank 0's data in step 0 and the rest later.
TEST_P(AllToAllWorld, SmallAndMultiStepSendersInOneCall) {
  const int n = GetParam();
  run_ranks(
      n,
      [n](int rank) {
        SoftChecks soft;
        auto elements = [](int src, int dst) -> int64_t {
          return src == 0 ? 1 + dst % 3 : 700 + 37 * dst + src;
        };
        for (DType dt : all_dtypes()) {
          const std::string what =
              "all_to_all_single small+multi-step " + std::string(dtype_name(dt));
          soft.check(what, [&] { check_uneven_all_to_all(rank, n, dt, elements, what); });
        }
        soft.finish();
      },
      small_chunks());
}

// Pieces around the size of a step line (a rank whose counts and pieces fit its
// line sends step 0 there, others through their slot): rank r sends k + r
// elements to every peer, so in one call some ranks are compact and some are
// not, and consecutive calls on the same lines switch between the two forms.
// Also counts that need two bytes (a compact rank receiving 300 elements).
TEST_P(AllToAllWorld, PiecesAroundTheStepLineSize) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    for (DType dt : {DType::Int8, DType::Float32, DType::Float64}) {
      for (int64_t k = 0; k <= 9; ++k) {
        for (bool wide : {false, true}) {
          const std::string what = "all_to_all_single " + std::string(dtype_name(dt)) +
                                   " k=" + std::to_string(k) + (wide ? " wide" : "");
          // Rank 0 sends 300 elements to every peer when `wide` (its step is in
          // its slot; its peers' counts then need two bytes).
          auto elements = [&](int src, int) -> int64_t { return wide && src == 0 ? 300 : k + src; };
          soft.check(what, [&] { check_uneven_all_to_all(rank, n, dt, elements, what); });
        }
      }
    }
    soft.finish();
  });
}

// Step 0's three forms in one call: rank 0's counts need more than two bytes
// (70,000 elements to every peer: its counts and pieces in its slot), rank 1's
// pieces do not fit its line (counts in the line, pieces in the slot), the
// others' fit (compact).
TEST_P(AllToAllWorld, StepFormsMixedInOneCall) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    for (DType dt : {DType::Int8, DType::Float32}) {
      for (int64_t k : {0, 1, 3}) {
        const std::string what =
            "all_to_all_single " + std::string(dtype_name(dt)) + " k=" + std::to_string(k);
        auto elements = [&](int src, int) -> int64_t {
          return src == 0 ? 70000 : src == 1 ? 200 + k : k + src;
        };
        soft.check(what, [&] { check_uneven_all_to_all(rank, n, dt, elements, what); });
      }
    }
    soft.finish();
  });
}

// A rank whose counts are all one count writes it once (uniform); ranks whose
// lines are all uniform alike skip the count matrix. Here rank 0 sends and
// expects c everywhere (uniform) while every other rank keeps c + rank elements
// for itself: the matrix agrees, the forms differ, and the general path must
// read rank 0's one count as 2N. c spans the compact line (1, 3), counts in the
// line with pieces in the slot (40, 200) and counts of two bytes (300).
TEST_P(AllToAllWorld, UniformRankAmongUnevenOnes) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    for (DType dt : {DType::Int8, DType::Float32}) {
      for (int64_t c : {1, 3, 40, 200, 300}) {
        const std::string what =
            "all_to_all_single " + std::string(dtype_name(dt)) + " c=" + std::to_string(c);
        auto elements = [&](int src, int dst) -> int64_t { return src == dst ? c + src : c; };
        soft.check(what, [&] { check_uneven_all_to_all(rank, n, dt, elements, what); });
      }
    }
    soft.finish();
  });
}

TEST_P(AllToAllWorld, VcCountMatrixEveryDtype) {
  const int n = GetParam();
  run_ranks(n, [n](int rank) {
    SoftChecks soft;
    int index = 0;
    for (DType dt : all_dtypes()) {
      for (int64_t scale : {int64_t{1}, int64_t{900}}) {
        const bool async = (index++ % 2) == 1;
        const std::string what = "all_to_all_v_c " + case_name(dt, scale, async);
        soft.check(what, [&] {
          std::vector<int64_t> matrix;
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n; ++j) matrix.push_back(rows_between(i, j) * scale);
          }
          std::vector<Tensor> parts;
          for (int peer = 0; peer < n; ++peer) {
            parts.push_back(make_tensor({rows_between(rank, peer) * scale, 2}, dt,
                                        [&](int64_t i) { return pattern_value(dt, pair_key(rank, peer), i); }));
          }
          Tensor input = Tensor::cat(parts);
          int64_t out_rows = 0;
          for (int src = 0; src < n; ++src) out_rows += rows_between(src, rank) * scale;
          Tensor output = make_tensor({out_rows, 2}, dt, [](int64_t) { return 1.0; });
          CommHandle h = all_to_all_v_c(output, input, matrix, WORLD, async);
          if (async) {
            RCHECK(static_cast<bool>(h)) << what;
            h.wait();
          } else {
            RCHECK(!h) << what;
          }
          std::vector<double> expected;
          for (int src = 0; src < n; ++src) {
            for (int64_t i = 0; i < rows_between(src, rank) * scale * 2; ++i) {
              expected.push_back(pattern_value(dt, pair_key(src, rank), i));
            }
          }
          check_tensor(output, dt, {out_rows, 2}, [&](int64_t i) { return expected[static_cast<size_t>(i)]; },
                       what);
        });
      }
    }
    soft.finish();
  }, small_chunks());
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AllToAllWorld, ::testing::Values(1, 2, 3, 4), world_size_name);

// The docstring example of all_to_all_with_output_shape (2 ranks).
TEST(AllToAll, WithOutputShapeDocstring) {
  run_ranks(2, [](int rank) {
    std::vector<Tensor> send;
    std::vector<Shape> shapes;
    if (rank == 0) {
      send = {Tensor::scalar(1.0), Tensor::from_vector<float>({2, 3, 4, 5}, {2, 2})};
      shapes = {Shape{}, Shape{2}};
    } else {
      send = {Tensor::from_vector<float>({2, 2}), Tensor::from_vector<float>({4, 5, 6, 7})};
      shapes = {Shape{2, 2}, Shape{4}};
    }
    auto [out, h] = all_to_all_with_output_shape(shapes, send);
    if (rank == 0) {
      check_tensor(out[0], DType::Float32, {}, [](int64_t) { return 1.0; }, "rank 0 output 0");
      check_tensor(out[1], DType::Float32, {2}, [](int64_t) { return 2.0; }, "rank 0 output 1");
    } else {
      check_tensor(out[0], DType::Float32, {2, 2}, [](int64_t i) { return 2.0 + i; }, "rank 1 output 0");
      check_tensor(out[1], DType::Float32, {4}, [](int64_t i) { return 4.0 + i; }, "rank 1 output 1");
    }
  });
}

// The docstring example of all_to_all_single_with_output_shape: [0,1]+2r -> rank0 [0,2], rank1 [1,3].
TEST(AllToAll, SingleDocstring) {
  run_ranks(2, [](int rank) {
    Tensor input = Tensor::from_vector<float>({0.f + 2 * rank, 1.f + 2 * rank});
    auto [y, h] = all_to_all_single_with_output_shape({2}, input);
    check_tensor(y, DType::Float32, {2}, [&](int64_t i) { return rank + 2.0 * i; }, "docstring");
  });
}

// Split sizes come from the input tensor's own shape (MindSpore 2.5+ uses output_shape):
// rank 0 has 4 rows, rank 1 has 2; with the default input split each sends half of its
// rows to each rank, and both receive [2 rows from rank 0, 1 row from rank 1].
TEST(AllToAll, SingleDefaultSplitUsesInputShape) {
  run_ranks(2, [](int rank) {
    const int64_t rows = rank == 0 ? 4 : 2;
    Tensor x = make_tensor({rows, 2}, DType::Int32, [&](int64_t i) { return 100.0 * rank + i; });
    auto [y, h] = all_to_all_single_with_output_shape({3, 2}, x, {2, 1}, {});
    // From rank 0: rows [2r, 2r+2) of its 4; from rank 1: row r of its 2.
    std::vector<double> expected;
    for (int64_t i = 0; i < 4; ++i) expected.push_back(rank * 4 + i);
    for (int64_t i = 0; i < 2; ++i) expected.push_back(100.0 + rank * 2 + i);
    check_tensor(y, DType::Int32, {3, 2}, [&](int64_t i) { return expected[static_cast<size_t>(i)]; },
                 "default input split from the input's shape");
  });
}

// The output has output_shape whether or not it shares the input's dims after
// the first (the first kind reuses a layout kept per input and row count): calls
// alternate between [2n, 3] (rows like the input's), [n, 6] and [6n] outputs of
// one [2n, 3] input, each twice, so a kept layout is reused and must not leak
// into a call of another shape.
TEST(AllToAll, SingleOutputShapesOfOneInput) {
  run_ranks(2, [](int rank) {
    const int64_t n = 2;
    Tensor x = make_tensor({2 * n, 3}, DType::Float32, [&](int64_t i) { return 100.0 * rank + i; });
    // Rank r receives elements [6r, 6r+6) of each rank p's input, p in order.
    auto expected = [&](int64_t i) { return 100.0 * (i / 6) + 6 * rank + i % 6; };
    for (int round = 0; round < 2; ++round) {
      for (const Shape& shape : {Shape{2 * n, 3}, Shape{n, 6}, Shape{6 * n}}) {
        auto [y, h] = all_to_all_single_with_output_shape(shape, x);
        check_tensor(y, DType::Float32, shape, expected,
                     "output shape of rank " + std::to_string(shape.size()) + " round " +
                         std::to_string(round));
      }
    }
  });
}

// Nothing arrives at all: an empty result of shape (0, output_shape[1:]).
TEST(AllToAll, SingleNothingReceived) {
  run_ranks(2, [](int) {
    auto [y, h] = all_to_all_single_with_output_shape({0, 3}, Tensor::zeros({0, 3}), {0, 0}, {0, 0});
    RCHECK_EQ(y.numel(), int64_t{0});
  });
}

// all_to_all_single and all_to_all_v_c in an unsorted sub-group: list index = group rank.
TEST(AllToAll, UnsortedSubGroup) {
  run_ranks(4, [](int rank) {
    const std::vector<int> trio = {2, 0, 3};
    const int g = index_in(trio, rank);
    if (g < 0) return;
    create_group("a2a_trio", trio);
    // Equal split: block j goes to group rank j (world rank trio[j]).
    Tensor x = make_tensor({3, 2}, DType::Int64, [&](int64_t i) { return 10.0 * rank + i / 2; });
    auto [y, h] = all_to_all_single_with_output_shape({3, 2}, x, {}, {}, "a2a_trio");
    check_tensor(y, DType::Int64, {3, 2}, [&](int64_t i) { return 10.0 * trio[static_cast<size_t>(i / 2)] + g; },
                 "all_to_all_single in [2,0,3]");
    // v_c: group rank i sends (i + 1) rows to every group rank.
    std::vector<int64_t> matrix = {1, 1, 1, 2, 2, 2, 3, 3, 3};
    Tensor input = make_tensor({3 * (g + 1)}, DType::Float32, [&](int64_t) { return double(rank); });
    Tensor output = Tensor::zeros({6});
    all_to_all_v_c(output, input, matrix, "a2a_trio");
    check_tensor(output, DType::Float32, {6}, [&](int64_t i) {
      return double(trio[static_cast<size_t>(i == 0 ? 0 : (i < 3 ? 1 : 2))]);
    }, "all_to_all_v_c in [2,0,3]");
    // Lists in group-rank order.
    std::vector<Tensor> inputs;
    std::vector<Shape> shapes;
    for (int j = 0; j < 3; ++j) {
      inputs.push_back(Tensor::full({j + 1}, 10.0 * g + j, DType::Int8));
      shapes.push_back({g + 1});
    }
    auto [outs, h2] = all_to_all_with_output_shape(shapes, inputs, "a2a_trio");
    for (int j = 0; j < 3; ++j) {
      check_tensor(outs[static_cast<size_t>(j)], DType::Int8, {g + 1}, [&](int64_t) { return 10.0 * j + g; },
                   "all_to_all_with_output_shape in [2,0,3] from group rank " + std::to_string(j));
    }
  });
}

// Non-contiguous (transposed) inputs are sent as their logical elements.
TEST(AllToAll, NonContiguousInputs) {
  run_ranks(2, [](int rank) {
    // base [3, 4] = 100 rank + i; view = base^T, [4, 3]: view(a, b) = 100 rank + 4b + a.
    Tensor base = make_tensor({3, 4}, DType::Int32, [&](int64_t i) { return 100.0 * rank + i; });
    Tensor view = base.transpose(0, 1);
    auto view_value = [](int r, int64_t a, int64_t b) { return 100.0 * r + 4 * b + a; };
    // Equal split: rows [2j, 2j + 2) of the view go to rank j.
    auto [y, h] = all_to_all_single_with_output_shape({4, 3}, view);
    check_tensor(y, DType::Int32, {4, 3}, [&](int64_t k) {
      int64_t src = k / 6, a = rank * 2 + (k % 6) / 3, b = k % 3;
      return view_value(static_cast<int>(src), a, b);
    }, "all_to_all_single of a transposed view");
    // v_c: every rank sends 2 rows to each rank.
    Tensor out = Tensor::zeros({4, 3}, DType::Int32);
    all_to_all_v_c(out, view, {2, 2, 2, 2});
    check_tensor(out, DType::Int32, {4, 3}, [&](int64_t k) {
      int64_t src = k / 6, a = rank * 2 + (k % 6) / 3, b = k % 3;
      return view_value(static_cast<int>(src), a, b);
    }, "all_to_all_v_c of a transposed view");
    // Lists: list entry j is a transposed [1, 2] -> [2, 1] view.
    std::vector<Tensor> inputs;
    for (int j = 0; j < 2; ++j) {
      inputs.push_back(make_tensor({1, 2}, DType::Int32, [&](int64_t i) { return 10.0 * rank + 2 * j + i; })
                           .transpose(0, 1));
    }
    auto [outs, h2] = all_to_all_with_output_shape({Shape{2, 1}, Shape{2, 1}}, inputs);
    for (int src = 0; src < 2; ++src) {
      check_tensor(outs[static_cast<size_t>(src)], DType::Int32, {2, 1},
                   [&](int64_t i) { return 10.0 * src + 2 * rank + i; }, "all_to_all list of transposed views");
    }
  });
}

// The docstring example of all_to_all_v_c (2 ranks, matrix [0, 3, 3, 0]).
TEST(AllToAll, VcDocstringAndLargerOutput) {
  run_ranks(2, [](int rank) {
    Tensor output = Tensor::zeros({3});
    Tensor input = Tensor::from_vector<float>({0.f, 1.f * rank, 2.f * rank});
    all_to_all_v_c(output, input, {0, 3, 3, 0});
    check_tensor(output, DType::Float32, {3}, [&](int64_t i) { return rank == 0 ? double(i) : 0.0; },
                 "docstring all_to_all_v_c");
    // An output with more rows than needed: the first rows receive the data.
    Tensor big = Tensor::full({5}, -1.0);
    all_to_all_v_c(big, input, {0, 3, 3, 0});
    std::vector<double> v = values_of(big);
    for (int64_t i = 0; i < 3; ++i) RCHECK_EQ(v[static_cast<size_t>(i)], rank == 0 ? double(i) : 0.0);
  });
}

TEST(AllToAll, Errors) {
  run_ranks(2, [](int) {
    SoftChecks soft;
    Tensor one = Tensor::ones({1});
    // all_to_all_with_output_shape: list lengths must be N, dtypes equal.
    SOFT_THROWS(soft, all_to_all_with_output_shape({Shape{1}}, {one}), collie::TypeError,
                      "all_to_all_with_output_shape");
    SOFT_THROWS(soft, all_to_all_with_output_shape({Shape{1}, Shape{1}}, {one, one, one}), collie::TypeError,
                      "all_to_all_with_output_shape");
    SOFT_THROWS(soft, all_to_all_with_output_shape({Shape{1}, Shape{1}, Shape{1}}, {one, one}), collie::TypeError,
                      "all_to_all_with_output_shape");
    SOFT_THROWS(soft, all_to_all_with_output_shape({Shape{1}, Shape{1}}, {one, Tensor::ones({1}, DType::Int32)}),
                      collie::TypeError, "all_to_all_with_output_shape");
    SOFT_THROWS(soft, all_to_all_with_output_shape({Shape{1}, Shape{2, -1}}, {one, one}),
                collie::ValueError, "output_shape_list[1] [2, -1] has a negative dimension");
    // all_to_all_single: indivisible default splits, wrong lengths or sums.
    const char* single = "all_to_all_single_with_output_shape";
    SOFT_THROWS(soft, all_to_all_single_with_output_shape({4}, Tensor::ones({3})), collie::ValueError, single);
    SOFT_THROWS(soft, all_to_all_single_with_output_shape({3}, Tensor::ones({4})), collie::ValueError, single);
    SOFT_THROWS(soft, all_to_all_single_with_output_shape({4}, Tensor::ones({4}), {}, {1, 1, 2}), collie::ValueError,
                      single);
    SOFT_THROWS(soft, all_to_all_single_with_output_shape({4}, Tensor::ones({4}), {}, {1, 2}), collie::ValueError,
                      single);
    SOFT_THROWS(soft, all_to_all_single_with_output_shape({4}, Tensor::ones({4}), {4}, {}), collie::ValueError,
                      single);
    // all_to_all_v_c: N*N matrix, equal row sizes and dtypes, enough output rows.
    Tensor out = Tensor::zeros({4});
    SOFT_THROWS(soft, all_to_all_v_c(out, Tensor::ones({2}), {1, 1, 1}), collie::TypeError, "all_to_all_v_c");
    SOFT_THROWS(soft, all_to_all_v_c(out, Tensor::ones({2}), {1, 1, 1, 1, 1}), collie::TypeError, "all_to_all_v_c");
    Tensor out2 = Tensor::zeros({4, 2});
    SOFT_THROWS(soft, all_to_all_v_c(out2, Tensor::ones({2, 3}), {1, 1, 1, 1}), collie::ValueError, "all_to_all_v_c");
    Tensor out3 = Tensor::zeros({4}, DType::Int32);
    SOFT_THROWS(soft, all_to_all_v_c(out3, Tensor::ones({2}), {1, 1, 1, 1}), collie::ValueError, "all_to_all_v_c");
    Tensor small = Tensor::zeros({1});
    SOFT_THROWS(soft, all_to_all_v_c(small, Tensor::ones({2}), {1, 1, 1, 1}), collie::ValueError, "all_to_all_v_c");
    soft.finish();
    // The world still works.
    auto [y, h] = all_to_all_single_with_output_shape({2}, Tensor::ones({2}));
    check_tensor(y, DType::Float32, {2}, [](int64_t) { return 1.0; }, "all_to_all_single after errors");
  });
}

// The sender's and receiver's element counts must agree: CommError otherwise.
TEST(AllToAll, CountMismatchIsCommError) {
  run_ranks(2, [](int rank) {
    // Rank 1 expects 3 elements from rank 0, which sends 2.
    std::vector<Tensor> inputs = {Tensor::ones({2}), Tensor::ones({2})};
    std::vector<Shape> shapes = {Shape{rank == 1 ? int64_t{3} : int64_t{2}}, Shape{2}};
    if (rank == 1) {
      RCHECK_THROWS_DERIVED(all_to_all_with_output_shape(shapes, inputs), collie::CommError,
                            "all_to_all");
    } else {
      try {  // the sender may complete or see the mismatch too
        all_to_all_with_output_shape(shapes, inputs);
      } catch (const collie::CommError&) {
      }
    }
  });
}

// On 2 ranks, calls `call(count, group)` with a count in each form of step 0,
// where every rank reads the whole matrix and raises alike: pieces in the line
// (2 elements), counts in the line and pieces in the slot (40), counts in the
// slot's header (70,000); each on a group of its own (a failed call leaves its
// group unusable). The call makes rank 1 expect one element more from rank 0
// than rank 0 sends.
void expect_count_mismatch_in_each_step_form(
    const std::string& what, const std::function<void(int64_t, const std::string&)>& call) {
  SoftChecks soft;
  for (int64_t count : {int64_t{2}, int64_t{40}, int64_t{70000}}) {
    const std::string group = "pair" + std::to_string(count);
    create_group(group, {0, 1});
    const std::string pair = "rank 0 sends " + std::to_string(count) +
                             " elements to rank 1, which expects " + std::to_string(count + 1);
    soft.check(what + " of " + std::to_string(count) + " elements", [&] {
      RCHECK_THROWS_DERIVED(call(count, group), collie::CommError,
                            "send and receive sizes disagree", pair);
    });
    destroy_group(group);
  }
  soft.finish();
}

// all_to_all_with_output_shape, rank 1 expecting one element more from rank 0;
// the world works after the failures.
TEST(AllToAll, CountMismatchRaisesOnEveryRankInEachStepForm) {
  run_ranks(2, [](int rank) {
    expect_count_mismatch_in_each_step_form(
        "pieces", [rank](int64_t count, const std::string& group) {
          std::vector<Tensor> inputs = {Tensor::ones({count}), Tensor::ones({count})};
          std::vector<Shape> shapes = {Shape{rank == 1 ? count + 1 : count}, Shape{count}};
          all_to_all_with_output_shape(shapes, inputs, group);
        });
    auto [y, h] = all_to_all_single_with_output_shape({2}, Tensor::ones({2}));
    check_tensor(
        y, DType::Float32, {2}, [](int64_t) { return 1.0; }, "all_to_all after");
  });
}

// Two even splits of different sizes: each rank's counts are all one count
// (uniform), rank 1's one more than rank 0's, so each expects what the other
// does not send, in each line form a uniform count takes (and in the slot).
TEST(AllToAll, EvenSplitsOfDifferentSizesRaiseOnEveryRank) {
  run_ranks(2, [](int rank) {
    expect_count_mismatch_in_each_step_form(
        "even splits", [rank](int64_t count, const std::string& group) {
          const int64_t mine = rank == 0 ? count : count + 1;
          all_to_all_single_with_output_shape({2 * mine}, Tensor::ones({2 * mine}), {}, {}, group);
        });
  });
}

}  // namespace
}  // namespace collie::testing
