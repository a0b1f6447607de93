#include "stress_run.h"

#include <deque>
#include <functional>
#include <string>

#include "check.h"
#include "collie/collie.h"
#include "values.h"

namespace collie::stress {
namespace {

using testing::check_tensor;
using testing::make_tensor;

// One operation as this rank sees it: its group, its data formulas, its reference.
struct Ctx {
  const OpSpec& s;
  const std::vector<int>& w;  // world ranks of the group
  std::string group;
  int n;
  int g;   // this rank's group rank
  int me;  // this rank's world rank

  int64_t per() const { return s.rows * s.cols; }
  Shape shape(int64_t rows) const { return {rows, s.cols}; }
  // Reduction inputs and their reduction over the group (exact in every dtype).
  double red_in(int world, int64_t i) const { return testing::rank_value(s.dtype, s.op, world, i + s.key); }
  double red_out(int64_t i) const { return testing::expected_reduction(s.dtype, s.op, w, i + s.key); }
  // Data-movement inputs: distinct per world rank.
  double pat(int world, int64_t i) const { return testing::pattern_value(s.dtype, world, i + s.key); }
  Tensor reduction_input(int64_t rows) const {
    return make_tensor(shape(rows), s.dtype, [&](int64_t i) { return red_in(me, i); });
  }
  Tensor pattern_input(int64_t rows) const {
    return make_tensor(shape(rows), s.dtype, [&](int64_t i) { return pat(me, i); });
  }
  // Expected value of element e of a concatenation over group ranks of `rows` rows each.
  double concat(int64_t e) const { return pat(w[static_cast<size_t>(e / per())], e % per()); }
  int64_t split(int i, int j) const { return s.splits[static_cast<size_t>(i * n + j)]; }
};

struct Pending {
  CommHandle handle;
  std::function<void()> check;  // may be empty
};

class Runner {
 public:
  Runner(const std::vector<GroupDef>& groups, int me) : groups_(groups), me_(me) {}
  void run(const OpSpec& s);
  void wait_all();
  RunStats stats;

 private:
  const std::vector<GroupDef>& groups_;
  int me_;
  std::deque<std::pair<std::string, Pending>> pending_;

  // Checks now, or after the handle's wait() when async.
  void finish(const Ctx& c, CommHandle h, std::function<void()> check);
  void zeros_placeholder(const Tensor& y, const Ctx& c, const char* what);
  void all_to_all(const Ctx& c);
  void point_to_point(const Ctx& c);
  void batch_ring(const Ctx& c);
};

void Runner::finish(const Ctx& c, CommHandle h, std::function<void()> check) {
  if (c.s.async) {
    RCHECK(static_cast<bool>(h)) << c.s.describe(groups_) << ": async_op=true needs a handle";
    pending_.emplace_back(c.s.describe(groups_), Pending{std::move(h), std::move(check)});
    ++stats.async;
    return;
  }
  RCHECK(!h) << c.s.describe(groups_) << ": async_op=false must return an empty handle";
  if (check) {
    check();
    ++stats.checked;
  }
}

void Runner::wait_all() {
  while (!pending_.empty()) {
    auto [what, p] = std::move(pending_.front());
    pending_.pop_front();
    try {
      p.handle.wait();
      if (p.check) {
        p.check();
        ++stats.checked;
      }
    } catch (const std::exception& e) {
      RCHECK(false) << what << " (waited late): " << testing::type_name_of(e) << ": " << e.what();
    }
  }
}

// Non-root ranks of reduce / gather get a shape-[1] tensor of zeros (as MindSpore).
void Runner::zeros_placeholder(const Tensor& y, const Ctx& c, const char* what) {
  check_tensor(y, c.s.dtype, {1}, [](int64_t) { return 0.0; }, c.s.describe(groups_) + " " + what);
  ++stats.checked;
}

void Runner::all_to_all(const Ctx& c) {
  const OpSpec& s = c.s;
  const int n = c.n, g = c.g;
  int64_t in_rows = 0, out_rows = 0;
  std::vector<int64_t> in_split(static_cast<size_t>(n)), out_split(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    in_split[static_cast<size_t>(j)] = c.split(g, j);
    out_split[static_cast<size_t>(j)] = c.split(j, g);
    in_rows += c.split(g, j);
    out_rows += c.split(j, g);
  }
  // Output row r came from group rank i's input row (rows i sent to ranks before us) + offset.
  auto expected = [c, n, g](int64_t e) {
    int64_t row = e / c.s.cols, col = e % c.s.cols;
    for (int i = 0; i < n; ++i) {
      if (row < c.split(i, g)) {
        int64_t src_row = row;
        for (int j = 0; j < g; ++j) src_row += c.split(i, j);
        return c.pat(c.w[static_cast<size_t>(i)], src_row * c.s.cols + col);
      }
      row -= c.split(i, g);
    }
    return -1.0;
  };
  const std::string what = s.describe(groups_);
  if (s.kind == Kind::AllToAllSingle) {
    auto [y, h] = all_to_all_single_with_output_shape(c.shape(out_rows), c.pattern_input(in_rows),
                                                      out_split, in_split, c.group, s.async);
    finish(c, h, [y = y, s, out_rows, c, expected, what] {
      check_tensor(y, s.dtype, c.shape(out_rows), expected, what);
    });
  } else if (s.kind == Kind::AllToAllVC) {
    Tensor out = Tensor::zeros(c.shape(out_rows), s.dtype);
    CommHandle h = all_to_all_v_c(out, c.pattern_input(in_rows), s.splits, c.group, s.async);
    finish(c, h, [out, s, out_rows, c, expected, what] {
      check_tensor(out, s.dtype, c.shape(out_rows), expected, what);
    });
  } else {
    // List form: the tensor rank i sends to rank j holds pat(i, j * 1000003 + e).
    std::vector<Tensor> inputs;
    std::vector<Shape> out_shapes;
    for (int j = 0; j < n; ++j) {
      inputs.push_back(make_tensor(c.shape(c.split(g, j)), s.dtype,
                                   [&](int64_t e) { return c.pat(c.me, j * 1000003LL + e); }));
      out_shapes.push_back(c.shape(c.split(j, g)));
    }
    auto [ys, h] = all_to_all_with_output_shape(out_shapes, inputs, c.group, s.async);
    finish(c, h, [ys = ys, s, c, n, g, what] {
      RCHECK_EQ(static_cast<int>(ys.size()), n) << what;
      for (int i = 0; i < n; ++i) {
        check_tensor(ys[static_cast<size_t>(i)], s.dtype, c.shape(c.split(i, g)),
                     [&](int64_t e) { return c.pat(c.w[static_cast<size_t>(i)], g * 1000003LL + e); },
                     what + " from group rank " + std::to_string(i));
      }
    });
  }
}

void Runner::point_to_point(const Ctx& c) {
  const OpSpec& s = c.s;
  const int sender = c.w[static_cast<size_t>(s.root)], receiver = c.w[static_cast<size_t>(s.peer)];
  const int tag = s.index % 1000;
  const std::string what = s.describe(groups_) + " " + std::to_string(sender) + "->" + std::to_string(receiver);
  auto check = [s, c, sender, what](const Tensor& y) {
    check_tensor(y, s.dtype, c.shape(s.rows), [&](int64_t i) { return c.pat(sender, i); }, what);
  };
  if (sender == receiver) {  // to oneself: only the non-blocking forms can pair up
    if (c.me != sender) return;
    CommHandle hs = isend(c.pattern_input(s.rows), receiver, c.group, tag);
    auto [y, hr] = irecv(Tensor::zeros(c.shape(s.rows), s.dtype), sender, c.group, tag);
    hs.wait();
    hr.wait();
    check(y);
    ++stats.checked;
  } else if (c.me == sender) {
    if (s.async) finish(c, isend(c.pattern_input(s.rows), receiver, c.group, tag), {});
    else send(c.pattern_input(s.rows), receiver, c.group, tag);
  } else if (c.me == receiver) {
    Tensor like = Tensor::zeros(c.shape(s.rows), s.dtype);
    if (s.async) {
      auto [y, h] = irecv(like, sender, c.group, tag);
      finish(c, h, [y = y, check] { check(y); });
    } else {
      check(recv(like, sender, c.group, tag));
      ++stats.checked;
    }
  }
}

void Runner::batch_ring(const Ctx& c) {
  const OpSpec& s = c.s;
  const int next = c.w[static_cast<size_t>((c.g + 1) % c.n)];
  const int prev = c.w[static_cast<size_t>((c.g + c.n - 1) % c.n)];
  const int tag = s.index % 1000;
  std::vector<P2POp> ops;
  // Receive first in half the cases: any order must complete.
  if (s.key % 2 == 0) ops.emplace_back("irecv", Tensor::zeros(c.shape(s.rows), s.dtype), prev, c.group, tag);
  ops.emplace_back("isend", c.pattern_input(s.rows), next, c.group, tag);
  if (s.key % 2 != 0) ops.emplace_back("irecv", Tensor::zeros(c.shape(s.rows), s.dtype), prev, c.group, tag);
  std::vector<Tensor> out = batch_isend_irecv(ops);
  const size_t recv_at = s.key % 2 == 0 ? 0 : 1;
  check_tensor(out[recv_at], s.dtype, c.shape(s.rows), [&](int64_t i) { return c.pat(prev, i); },
               s.describe(groups_));
  ++stats.checked;
}

void Runner::run(const OpSpec& s) {
  const GroupDef& def = groups_[static_cast<size_t>(s.group)];
  int g = -1;
  for (size_t i = 0; i < def.ranks.size(); ++i) {
    if (def.ranks[i] == me_) g = static_cast<int>(i);
  }
  if (g < 0) return;  // not a member: the others run it without us
  const Ctx c{s, def.ranks, def.name, static_cast<int>(def.ranks.size()), g, me_};
  const std::string what = s.describe(groups_);
  const int64_t n = c.n, per = c.per();
  ++stats.issued;
  switch (s.kind) {
    case Kind::AllReduce: {
      auto [y, h] = all_reduce(c.reduction_input(s.rows), s.op, c.group, s.async);
      finish(c, h, [y = y, c, what] { check_tensor(y, c.s.dtype, c.shape(c.s.rows), [&](int64_t i) { return c.red_out(i); }, what); });
      break;
    }
    case Kind::AllGather: {
      auto [y, h] = all_gather_into_tensor(c.pattern_input(s.rows), c.group, s.async);
      finish(c, h, [y = y, c, n, what] { check_tensor(y, c.s.dtype, c.shape(n * c.s.rows), [&](int64_t e) { return c.concat(e); }, what); });
      break;
    }
    case Kind::ReduceScatter: {
      auto [y, h] = reduce_scatter_tensor(c.reduction_input(n * s.rows), s.op, c.group, s.async);
      finish(c, h, [y = y, c, per, what] { check_tensor(y, c.s.dtype, c.shape(c.s.rows), [&](int64_t i) { return c.red_out(c.g * per + i); }, what); });
      break;
    }
    case Kind::Reduce: {
      Tensor y = reduce(c.reduction_input(s.rows), c.w[static_cast<size_t>(s.root)], s.op, c.group);
      if (g != s.root) { zeros_placeholder(y, c, "(not the root)"); break; }
      check_tensor(y, s.dtype, c.shape(s.rows), [&](int64_t i) { return c.red_out(i); }, what);
      ++stats.checked;
      break;
    }
    case Kind::Broadcast: {
      const int src = c.w[static_cast<size_t>(s.root)];
      Tensor y = broadcast(c.pattern_input(s.rows), src, c.group);
      check_tensor(y, s.dtype, c.shape(s.rows), [&](int64_t i) { return c.pat(src, i); }, what);
      ++stats.checked;
      break;
    }
    case Kind::Gather: {
      Tensor y = gather_into_tensor(c.pattern_input(s.rows), c.w[static_cast<size_t>(s.root)], c.group);
      if (g != s.root) { zeros_placeholder(y, c, "(not the root)"); break; }
      check_tensor(y, s.dtype, c.shape(n * s.rows), [&](int64_t e) { return c.concat(e); }, what);
      ++stats.checked;
      break;
    }
    case Kind::Scatter: {
      const int src = c.w[static_cast<size_t>(s.root)];
      Tensor y = scatter_tensor(c.pattern_input(n * s.rows), src, c.group);
      check_tensor(y, s.dtype, c.shape(s.rows), [&](int64_t i) { return c.pat(src, g * per + i); }, what);
      ++stats.checked;
      break;
    }
    case Kind::Barrier:
      barrier(c.group);
      break;
    case Kind::SendRecv:
      point_to_point(c);
      break;
    case Kind::BatchRing:
      batch_ring(c);
      break;
    case Kind::AllToAllSingle:
    case Kind::AllToAllList:
    case Kind::AllToAllVC:
      all_to_all(c);
      break;
    case Kind::kCount:
      break;
  }
  // Bounded concurrency: handles are waited a few at a time, oldest first.
  if (pending_.size() >= 6 || s.index % 11 == 0) wait_all();
}

}  // namespace

RunStats run_plan(int world_rank, const std::vector<GroupDef>& groups,
                  const std::vector<OpSpec>& plan) {
  for (const GroupDef& def : groups) {
    if (def.name != WORLD) create_group(def.name, def.ranks);  // every rank: torch-style
  }
  Runner runner(groups, world_rank);
  for (const OpSpec& s : plan) {
    try {
      runner.run(s);
    } catch (const testing::CheckFailure&) {
      throw;
    } catch (const std::exception& e) {
      RCHECK(false) << s.describe(groups) << ": " << testing::type_name_of(e) << ": " << e.what();
    }
  }
  runner.wait_all();
  return runner.stats;
}

}  // namespace collie::stress
