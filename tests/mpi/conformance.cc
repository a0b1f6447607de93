// Backend conformance: every comm_func operation x all 10 dtypes x sizes
// {0, 1, 7, > 1 MiB} x roots x the world and sub-groups (including an unsorted
// rank list) x blocking and async, with closed-form expected values checked on
// every rank. The same binary runs on any backend:
//   mpirun -np 4 collie_conformance          (mpi, chosen because mpirun started it)
//   collie run -n 4 -- collie_conformance    (shm)
// It prints one line per rank and exits 1 on any mismatch (details on stderr), 2 if
// an operation threw.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.h"

using namespace collie;
using collie_test::Checker;
using collie_test::element;
using collie_test::kAllDTypes;
using collie_test::make_tensor;

namespace {

// One group under test: its name, world ranks in group order, this rank's group rank.
struct Ctx {
  std::string name;
  std::vector<int> ranks;
  int me;
  int m() const { return static_cast<int>(ranks.size()); }
  int world(int group_rank) const { return ranks[static_cast<size_t>(group_rank)]; }
  std::string label() const {
    std::string s = name == WORLD ? std::string("world") : name;
    s += "[";
    for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
    return s + "]";
  }
};

bool is_unsigned(DType d) { return d == DType::Bool || d == DType::UInt8; }

// Inputs of the reductions: small integers, exact in every dtype (bf16 holds
// integers up to 256), whose sum / product / min / max over 4 ranks stay exact.
double reduce_input(ReduceOp op, DType d, int r, int64_t i) {
  if (d == DType::Bool) {
    if (op == ReduceOp::SUM || op == ReduceOp::MAX) return (i + r) % 3 == 0;  // or
    return (i + r) % 4 != 0;                                                  // and
  }
  const bool sgn = !is_unsigned(d);
  switch (op) {
    case ReduceOp::SUM:
      return (r + 1) + (i % 5) - (sgn ? 3 : 0);
    case ReduceOp::PROD: {
      int64_t k = (i + 2 * r) % 3;
      return sgn ? (k == 0 ? -1.0 : static_cast<double>(k)) : static_cast<double>(k + 1);
    }
    case ReduceOp::MIN:
    case ReduceOp::MAX:
      return static_cast<double>((i * 7 + r * 3) % 11) - (sgn ? 5 : 0);
  }
  return 0;
}

double reduce_expected(ReduceOp op, DType d, int m, int64_t i) {
  double acc = reduce_input(op, d, 0, i);
  for (int r = 1; r < m; ++r) {
    double v = reduce_input(op, d, r, i);
    if (d == DType::Bool) {
      acc = (op == ReduceOp::SUM || op == ReduceOp::MAX) ? (acc != 0 || v != 0)
                                                         : (acc != 0 && v != 0);
      continue;
    }
    switch (op) {
      case ReduceOp::SUM:
        acc += v;
        break;
      case ReduceOp::PROD:
        acc *= v;
        break;
      case ReduceOp::MIN:
        acc = std::min(acc, v);
        break;
      case ReduceOp::MAX:
        acc = std::max(acc, v);
        break;
    }
  }
  return acc;
}

// Data of the moving operations: distinct per (rank, index), exact in every dtype.
double data_value(DType d, int r, int64_t i) {
  if (d == DType::Bool) return (r + i) % 2;
  return static_cast<double>((r * 37 + i * 11) % 101) - (is_unsigned(d) ? 0 : 50);
}

// More than 1 MiB of data, and an odd count.
int64_t big_count(DType d) { return static_cast<int64_t>((1u << 20) / element_size(d)) + 3; }

std::vector<int64_t> sizes(DType d, bool with_big) {
  std::vector<int64_t> s = {0, 1, 7};
  if (with_big) s.push_back(big_count(d));
  return s;
}

// Shape of `rows` blocks of k elements: {rows*k}, or {rows, 0} when k == 0 (dim 0
// must be >= 1 for the gathers).
Shape blocks(int64_t rows, int64_t k) { return k > 0 ? Shape{rows * k} : Shape{rows, 0}; }

const ReduceOp kOps[] = {ReduceOp::SUM, ReduceOp::PROD, ReduceOp::MIN, ReduceOp::MAX};

std::string what(const char* op, const Ctx& c, DType d, int64_t k, const std::string& extra = "") {
  return std::string(op) + " " + std::string(dtype_name(d)) + " x" + std::to_string(k) + " on " +
         c.label() + extra;
}

void test_all_reduce(Checker& ck, const Ctx& c, DType d, int64_t k, ReduceOp op, bool async) {
  Tensor x = make_tensor(blocks(1, k), d, [&](int64_t i) { return reduce_input(op, d, c.me, i); });
  auto [y, h] = all_reduce(x, op, c.name, async);
  h.wait();
  ck.tensor(what("all_reduce", c, d, k,
                 "(" + std::string(reduce_op_name(op)) + (async ? ", async)" : ")")),
            y, x.shape(), d, [&](int64_t i) { return reduce_expected(op, d, c.m(), i); });
}

void test_reduce_scatter(Checker& ck, const Ctx& c, DType d, int64_t k, ReduceOp op) {
  const int m = c.m();
  Tensor x = make_tensor(blocks(m, k), d, [&](int64_t i) { return reduce_input(op, d, c.me, i); });
  auto [y, h] = reduce_scatter_tensor(x, op, c.name);
  ck.tensor(what("reduce_scatter_tensor", c, d, k, "(" + std::string(reduce_op_name(op)) + ")"), y,
            blocks(1, k), d, [&](int64_t i) { return reduce_expected(op, d, m, c.me * k + i); });
}

void test_reduce(Checker& ck, const Ctx& c, DType d, int64_t k, ReduceOp op, int root) {
  Tensor x = make_tensor(blocks(1, k), d, [&](int64_t i) { return reduce_input(op, d, c.me, i); });
  Tensor y = reduce(x, c.world(root), op, c.name);
  if (c.me != root) return;
  ck.tensor(what("reduce", c, d, k,
                 "(" + std::string(reduce_op_name(op)) + ") root " + std::to_string(root)),
            y, x.shape(), d, [&](int64_t i) { return reduce_expected(op, d, c.m(), i); });
}

void test_moves(Checker& ck, const Ctx& c, DType d, int64_t k, int root) {
  const int m = c.m(), me = c.me;
  const std::string r = " root " + std::to_string(root);
  Tensor x = make_tensor(blocks(1, k), d, [&](int64_t i) { return data_value(d, me, i); });

  Tensor b = broadcast(x, c.world(root), c.name);
  ck.tensor(what("broadcast", c, d, k, r), b, x.shape(), d,
            [&](int64_t i) { return data_value(d, root, i); });

  Tensor g = gather_into_tensor(x, c.world(root), c.name);
  if (me == root) {
    ck.tensor(what("gather_into_tensor", c, d, k, r), g, blocks(m, k), d, [&](int64_t i) {
      return data_value(d, static_cast<int>(i / std::max<int64_t>(k, 1)),
                        i % std::max<int64_t>(k, 1));
    });
  }

  // The root's input holds block j for rank j; the others' inputs are ignored.
  Tensor xs = make_tensor(blocks(m, k), d, [&](int64_t i) {
    return me == root ? data_value(d, 100 + static_cast<int>(i / std::max<int64_t>(k, 1)), i) : -1;
  });
  Tensor s = scatter_tensor(xs, c.world(root), c.name);
  ck.tensor(what("scatter_tensor", c, d, k, r), s, blocks(1, k), d,
            [&](int64_t i) { return data_value(d, 100 + me, me * k + i); });
}

void test_all_gather(Checker& ck, const Ctx& c, DType d, int64_t k, bool async) {
  const int m = c.m();
  Tensor x = make_tensor(blocks(1, k), d, [&](int64_t i) { return data_value(d, c.me, i); });
  auto [y, h] = all_gather_into_tensor(x, c.name, async);
  h.wait();
  const int64_t kk = std::max<int64_t>(k, 1);
  ck.tensor(what("all_gather_into_tensor", c, d, k, async ? " (async)" : ""), y, blocks(m, k), d,
            [&](int64_t i) { return data_value(d, static_cast<int>(i / kk), i % kk); });
}

// Value that group rank `src` sends to group rank `dst` at element i of that piece.
double a2a_value(DType d, int src, int dst, int64_t i) {
  if (d == DType::Bool) return (src + dst + i) % 2;
  return static_cast<double>(((src * 8 + dst) * 5 + i) % 97) - (is_unsigned(d) ? 0 : 40);
}

// Uneven pieces: rank src sends a2a_len(src, dst) elements to dst (some are empty).
int64_t a2a_len(int src, int dst, int64_t scale) { return ((src + 2 * dst) % 3) * scale; }

void test_all_to_all(Checker& ck, const Ctx& c, DType d, int64_t scale, bool async) {
  const int m = c.m(), me = c.me;
  // all_to_all_single_with_output_shape with explicit split sizes.
  std::vector<int64_t> in_splits, out_splits;
  std::vector<double> in_vals;
  int64_t out_rows = 0;
  for (int j = 0; j < m; ++j) {
    in_splits.push_back(a2a_len(me, j, scale));
    out_splits.push_back(a2a_len(j, me, scale));
    out_rows += out_splits.back();
    for (int64_t i = 0; i < in_splits.back(); ++i) in_vals.push_back(a2a_value(d, me, j, i));
  }
  std::vector<double> expected;
  for (int j = 0; j < m; ++j) {
    for (int64_t i = 0; i < out_splits[static_cast<size_t>(j)]; ++i)
      expected.push_back(a2a_value(d, j, me, i));
  }
  Tensor x = make_tensor({static_cast<int64_t>(in_vals.size())}, d,
                         [&](int64_t i) { return in_vals[static_cast<size_t>(i)]; });
  auto [y, h] =
      all_to_all_single_with_output_shape({out_rows}, x, out_splits, in_splits, c.name, async);
  h.wait();
  ck.tensor(what("all_to_all_single_with_output_shape", c, d, scale, async ? " (async)" : ""), y,
            {out_rows}, d, [&](int64_t i) { return expected[static_cast<size_t>(i)]; });

  // all_to_all_with_output_shape: a list of tensors, one per peer.
  std::vector<Tensor> inputs;
  std::vector<Shape> shapes;
  for (int j = 0; j < m; ++j) {
    inputs.push_back(
        make_tensor({a2a_len(me, j, scale)}, d, [&](int64_t i) { return a2a_value(d, me, j, i); }));
    shapes.push_back({a2a_len(j, me, scale)});
  }
  auto [outs, h2] = all_to_all_with_output_shape(shapes, inputs, c.name, async);
  h2.wait();
  for (int j = 0; j < m; ++j) {
    ck.tensor(what("all_to_all_with_output_shape", c, d, scale, " from " + std::to_string(j)),
              outs[static_cast<size_t>(j)], shapes[static_cast<size_t>(j)], d,
              [&](int64_t i) { return a2a_value(d, j, me, i); });
  }

  // all_to_all_v_c: the whole matrix on every rank; output with room to spare.
  std::vector<int64_t> matrix;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < m; ++j) matrix.push_back(a2a_len(i, j, scale));
  }
  Tensor out = make_tensor({out_rows + 2}, d, [](int64_t) { return 1; });
  CommHandle h3 = all_to_all_v_c(out, x, matrix, c.name, async);
  h3.wait();
  ck.tensor(what("all_to_all_v_c", c, d, scale), out, {out_rows + 2}, d,
            [&](int64_t i) { return i < out_rows ? expected[static_cast<size_t>(i)] : 1.0; });
}

void test_p2p(Checker& ck, const Ctx& c, DType d, int64_t k) {
  const int m = c.m(), me = c.me;
  const int next = (me + 1) % m, prev = (me + m - 1) % m;
  // A ring with isend/irecv (m == 1: to oneself).
  Tensor x = make_tensor(blocks(1, k), d, [&](int64_t i) { return data_value(d, me, i); });
  CommHandle hs = isend(x, c.world(next), c.name, 5);
  auto [y, hr] = irecv(x, c.world(prev), c.name, 5);
  hr.wait();
  hs.wait();
  ck.tensor(what("isend/irecv ring", c, d, k), y, x.shape(), d,
            [&](int64_t i) { return data_value(d, prev, i); });

  if (m < 2 || me > 1) return;
  // Blocking send/recv between group ranks 0 and 1, and two tags received in
  // the reverse order of sending.
  const int other = 1 - me;
  Tensor a = make_tensor(blocks(1, k), d, [&](int64_t i) { return data_value(d, 10 + me, i); });
  if (me == 0) {
    send(a, c.world(other), c.name, 1);
    Tensor got = recv(a, c.world(other), c.name, 1);
    ck.tensor(what("send/recv", c, d, k), got, a.shape(), d,
              [&](int64_t i) { return data_value(d, 11, i); });
    CommHandle t1 =
        isend(make_tensor(blocks(1, k), d, [&](int64_t i) { return data_value(d, 1, i); }),
              c.world(other), c.name, 21);
    CommHandle t2 =
        isend(make_tensor(blocks(1, k), d, [&](int64_t i) { return data_value(d, 2, i); }),
              c.world(other), c.name, 22);
    t1.wait();
    t2.wait();
  } else {
    Tensor got = recv(a, c.world(other), c.name, 1);
    send(a, c.world(other), c.name, 1);
    ck.tensor(what("send/recv", c, d, k), got, a.shape(), d,
              [&](int64_t i) { return data_value(d, 10, i); });
    Tensor second = recv(a, c.world(other), c.name, 22);
    Tensor first = recv(a, c.world(other), c.name, 21);
    ck.tensor(what("recv tag 22 before tag 21", c, d, k), second, a.shape(), d,
              [&](int64_t i) { return data_value(d, 2, i); });
    ck.tensor(what("recv tag 21 after tag 22", c, d, k), first, a.shape(), d,
              [&](int64_t i) { return data_value(d, 1, i); });
  }
}

// Every rank sends to and receives from every member (itself included) in one
// batch, sends listed first: must not deadlock whatever the message size.
void test_batch(Checker& ck, const Ctx& c, DType d, int64_t k) {
  const int m = c.m(), me = c.me;
  std::vector<P2POp> ops;
  for (int j = 0; j < m; ++j) {
    ops.emplace_back(
        "isend", make_tensor(blocks(1, k), d, [&](int64_t i) { return a2a_value(d, me, j, i); }),
        c.world(j), c.name, 7);
  }
  for (int j = 0; j < m; ++j) ops.emplace_back("irecv", blocks(1, k), c.world(j), c.name, 7, d);
  std::vector<Tensor> got = batch_isend_irecv(ops);
  for (int j = 0; j < m; ++j) {
    ck.tensor(what("batch_isend_irecv", c, d, k, " from " + std::to_string(j)),
              got[static_cast<size_t>(m + j)], blocks(1, k), d,
              [&](int64_t i) { return a2a_value(d, j, me, i); });
  }
}

// Several operations in flight at once, waited in reverse order, with the
// caller busy meanwhile.
void test_async_overlap(Checker& ck, const Ctx& c, DType d) {
  const int64_t k = big_count(d);
  Tensor a =
      make_tensor({k}, d, [&](int64_t i) { return reduce_input(ReduceOp::SUM, d, c.me, i); });
  Tensor b = make_tensor({7}, d, [&](int64_t i) { return data_value(d, c.me, i); });
  Tensor s = make_tensor({c.m() * 7}, d,
                         [&](int64_t i) { return reduce_input(ReduceOp::MAX, d, c.me, i); });
  auto [ya, ha] = all_reduce(a, ReduceOp::SUM, c.name, true);
  auto [yb, hb] = all_gather_into_tensor(b, c.name, true);
  auto [ys, hs] = reduce_scatter_tensor(s, ReduceOp::MAX, c.name, true);
  volatile double sink = 0;
  for (int i = 0; i < 200000; ++i) sink = sink + std::sqrt(static_cast<double>(i));
  hs.wait();
  hb.wait();
  ha.wait();
  ck.truth(what("async handles", c, d, k),
           ha.is_completed() && hb.is_completed() && hs.is_completed(),
           "a handle is not completed after wait()");
  ck.tensor(what("async all_reduce", c, d, k), ya, {k}, d,
            [&](int64_t i) { return reduce_expected(ReduceOp::SUM, d, c.m(), i); });
  ck.tensor(what("async all_gather", c, d, 7), yb, {c.m() * 7}, d,
            [&](int64_t i) { return data_value(d, static_cast<int>(i / 7), i % 7); });
  ck.tensor(what("async reduce_scatter", c, d, 7), ys, {7}, d,
            [&](int64_t i) { return reduce_expected(ReduceOp::MAX, d, c.m(), c.me * 7 + i); });
}

// The roots to test: the last rank, rank 1 and (small sizes only) rank 0.
std::vector<int> roots(const Ctx& c, bool big) {
  std::vector<int> r = {c.m() - 1};
  if (c.m() > 2) r.push_back(1);
  if (!big && c.m() > 1) r.push_back(0);
  return r;
}

// Memory for pieces that lie more than 2 GiB apart, the most MPI's int
// displacements reach: one reservation of address space (no memory behind it but
// two windows), a window for a large piece and one for small ones, 3 GiB apart
// in either order.
class FarApart {
 public:
  static constexpr size_t kWindow = 512u << 10;
  static constexpr size_t kDistance = size_t{3} << 30;

  explicit FarApart(bool small_first) {
    void* p = mmap(nullptr, kDistance + kWindow, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("FarApart: mmap failed");
    base_ = static_cast<uint8_t*>(p);
    for (uint8_t* w : {base_, base_ + kDistance}) {
      if (mprotect(w, kWindow, PROT_READ | PROT_WRITE) != 0)
        throw std::runtime_error("FarApart: mprotect failed");
    }
    large_ = small_first ? base_ + kDistance : base_;
    small_ = small_first ? base_ : base_ + kDistance;
  }
  FarApart(const FarApart&) = delete;
  FarApart& operator=(const FarApart&) = delete;
  ~FarApart() { munmap(base_, kDistance + kWindow); }

  // A tensor of `values` in the large window or, the next one each time, in the small.
  Tensor tensor(bool large, int64_t n, DType d, const std::function<double(int64_t)>& f) {
    uint8_t* at = large ? large_ : small_ + 64 * small_used_++;
    Tensor t = Tensor::from_blob(at, {n}, d);
    Tensor values = make_tensor({n}, d, f);
    std::memcpy(at, values.data_ptr(), static_cast<size_t>(n) * element_size(d));
    return t;
  }

 private:
  uint8_t* base_ = nullptr;
  uint8_t* large_ = nullptr;
  uint8_t* small_ = nullptr;
  size_t small_used_ = 0;
};

// all_to_all_with_output_shape where the ranks lay their pieces out differently:
// odd group ranks pass views of one tensor (packed, one buffer), even ones a
// tensor per piece, the large piece (300 KiB) for the next rank and 3 elements
// for the others, more than 2 GiB away from it (after it on group ranks 0, 4,
// ..., before it on 2, 6, ...: FarApart); from 3 ranks on, group rank 0
// receives nothing (with 2, rank 0 would then pass a single piece). On the
// mpi backend any rank's separate pieces make every rank's call MPI_Ialltoallw,
// which reaches the far pieces through datatypes of their own
// (src/backends/mpi/all_to_all.cc).
int64_t mixed_len(int src, int dst, int m, int64_t large) {
  if (m >= 3 && dst == 0) return 0;
  return dst == (src + 1) % m ? large : 3;
}

void test_all_to_all_mixed(Checker& ck, const Ctx& c, DType d, bool async) {
  const int m = c.m(), me = c.me;
  const int64_t large = static_cast<int64_t>((300u << 10) / element_size(d)) + 1;
  std::vector<Shape> shapes;
  std::vector<int64_t> lens;
  for (int j = 0; j < m; ++j) {
    lens.push_back(mixed_len(me, j, m, large));
    shapes.push_back({mixed_len(j, me, m, large)});
  }
  FarApart far(/*small_first=*/me % 4 == 2);
  std::vector<Tensor> inputs;
  if (me % 2 == 1) {
    std::vector<double> vals;
    for (int j = 0; j < m; ++j) {
      for (int64_t i = 0; i < lens[static_cast<size_t>(j)]; ++i)
        vals.push_back(a2a_value(d, me, j, i));
    }
    Tensor packed = make_tensor({static_cast<int64_t>(vals.size())}, d,
                                [&](int64_t i) { return vals[static_cast<size_t>(i)]; });
    inputs = packed.split(lens);
  } else {
    for (int j = 0; j < m; ++j) {
      inputs.push_back(far.tensor(lens[static_cast<size_t>(j)] == large,
                                  lens[static_cast<size_t>(j)], d,
                                  [&](int64_t i) { return a2a_value(d, me, j, i); }));
    }
  }
  auto [outs, h] = all_to_all_with_output_shape(shapes, inputs, c.name, async);
  h.wait();
  for (int j = 0; j < m; ++j) {
    ck.tensor(what("all_to_all_with_output_shape (mixed layouts)", c, d, large,
                   " from " + std::to_string(j) + (async ? " (async)" : "")),
              outs[static_cast<size_t>(j)], shapes[static_cast<size_t>(j)], d,
              [&](int64_t i) { return a2a_value(d, j, me, i); });
  }
}

void run_group(Checker& ck, const Ctx& c, bool full) {
  for (DType d : kAllDTypes) {
    for (int64_t k : sizes(d, full)) {
      const bool big = k > 7;
      for (ReduceOp op : kOps) {
        if (big && (op == ReduceOp::PROD || op == ReduceOp::MIN)) continue;  // time
        test_all_reduce(ck, c, d, k, op, false);
        test_reduce_scatter(ck, c, d, k, op);
        for (int root : roots(c, big)) test_reduce(ck, c, d, k, op, root);
      }
      test_all_reduce(ck, c, d, k, ReduceOp::SUM, true);
      test_all_gather(ck, c, d, k, false);
      test_all_gather(ck, c, d, k, true);
      for (int root : roots(c, big)) test_moves(ck, c, d, k, root);
      test_p2p(ck, c, d, k);
      test_batch(ck, c, d, k);
    }
    for (int64_t scale : {int64_t{0}, int64_t{1}, int64_t{5}})
      test_all_to_all(ck, c, d, scale, false);
    test_all_to_all(ck, c, d, full ? big_count(d) / 4 : 3, true);
    if (d == DType::Float32 || d == DType::Bool || d == DType::Float64)
      test_all_to_all_mixed(ck, c, d, /*async=*/d == DType::Float64);
    if (full) test_async_overlap(ck, c, d);
    barrier(c.name);
  }
}

}  // namespace

int main() {
  auto t0 = std::chrono::steady_clock::now();
  int rank = 0;
  try {
    init();
    rank = get_rank();
    const int n = get_group_size();
    Checker ck(rank);
    // The world, then sub-groups: the world in reverse order, and an unsorted pair
    // ([3, 1] with 4 ranks; [2, 0] with 3; [1, 0] with 2).
    std::vector<Ctx> groups;
    std::vector<int> world(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) world[static_cast<size_t>(i)] = i;
    groups.push_back({std::string(WORLD), world, rank});
    std::vector<int> reversed(world.rbegin(), world.rend());
    if (n > 1) {
      create_group("reversed", reversed);
      groups.push_back({"reversed", reversed, get_rank("reversed")});
      std::vector<int> pair = n >= 4 ? std::vector<int>{3, 1} : std::vector<int>{n - 1, 0};
      create_group("pair", pair);
      if (std::find(pair.begin(), pair.end(), rank) != pair.end()) {
        groups.push_back({"pair", pair, get_rank("pair")});
      }
    }
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      ck.truth("group rank of " + groups[gi].label(), groups[gi].world(groups[gi].me) == rank,
               "group rank does not map back to this world rank");
      run_group(ck, groups[gi], /*full=*/gi == 0);
    }
    if (n > 1) {
      destroy_group("pair");
      destroy_group("reversed");
    }
    barrier();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("rank %d: backend %s, %d ranks: %ld checks, %ld failures (%.1f s)\n", rank,
                backend_name().c_str(), n, ck.checks(), ck.failures(), secs);
    std::fflush(stdout);
    release();
    // A second init() after release() works (on mpi: MPI stays initialised; new communicators).
    init();
    auto [again, h] = all_reduce(Tensor::ones({3}, DType::Int32));
    ck.tensor("all_reduce after release() and init()", again, {3}, DType::Int32,
              [&](int64_t) { return n; });
    release();
    return ck.failures() == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: ERROR: %s\n", rank, e.what());
    return 2;
  }
}
