// NeighborExchange and the NeighborExchangeV2 halo exchange with its adjoint
// (collie/comm_ext.h), on batch_isend_irecv with tags reserved for them (tags.h).
#include <array>
#include <set>
#include <string>

#include "autograd/exchange.h"
#include "autograd/tags.h"
#include "autograd/tensor_math.h"
#include "collie/comm_ext.h"
#include "collie/errors.h"

namespace collie {
namespace {

using autograd::detail::add_into;
using autograd::detail::narrow;

std::vector<Tensor> received_only(const std::vector<P2POp>& ops,
                                  const std::vector<Tensor>& results) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == P2POp::Kind::IRECV) out.push_back(results[i]);
  }
  return out;
}

// ---- NeighborExchangeV2 geometry ----
// Directions 0..7: top, top_right, right, bottom_right, bottom, bottom_left, left, top_left.
// The neighbour in direction d sees this rank in direction (d + 4) % 8.
int opposite(int d) { return (d + 4) % 8; }

enum class Band { Low, Mid, High };  // rows: top/mid/bottom; cols: left/mid/right
Band row_band(int d) {
  return d == 0 || d == 1 || d == 7 ? Band::Low : (d == 2 || d == 6 ? Band::Mid : Band::High);
}
Band col_band(int d) {
  return d == 5 || d == 6 || d == 7 ? Band::Low : (d == 0 || d == 4 ? Band::Mid : Band::High);
}

struct Range {
  int64_t start, len;
};

// Lens are [top, bottom, left, right].
struct Lens {
  int64_t top, bottom, left, right;
  explicit Lens(const std::vector<int64_t>& v) : top(v[0]), bottom(v[1]), left(v[2]), right(v[3]) {}
};

// The slice of an (H, W) interior sent in direction d: an edge band of width send_lens.
Range send_rows(int d, const Lens& s, int64_t h) {
  switch (row_band(d)) {
    case Band::Low:
      return {0, s.top};
    case Band::Mid:
      return {0, h};
    case Band::High:
      return {h - s.bottom, s.bottom};
  }
  return {0, 0};
}
Range send_cols(int d, const Lens& s, int64_t w) {
  switch (col_band(d)) {
    case Band::Low:
      return {0, s.left};
    case Band::Mid:
      return {0, w};
    case Band::High:
      return {w - s.right, s.right};
  }
  return {0, 0};
}
// The halo region of the padded output filled from direction d.
Range recv_rows(int d, const Lens& r, int64_t h) {
  switch (row_band(d)) {
    case Band::Low:
      return {0, r.top};
    case Band::Mid:
      return {r.top, h};
    case Band::High:
      return {r.top + h, r.bottom};
  }
  return {0, 0};
}
Range recv_cols(int d, const Lens& r, int64_t w) {
  switch (col_band(d)) {
    case Band::Low:
      return {0, r.left};
    case Band::Mid:
      return {r.left, w};
    case Band::High:
      return {r.left + w, r.right};
  }
  return {0, 0};
}

Tensor region(const Tensor& t, Range rows, Range cols) {
  return narrow(narrow(t, 2, rows.start, rows.len), 3, cols.start, cols.len);
}

void check_ids(const std::vector<int>& ids, const char* name) {
  if (ids.size() != 8) {
    throw ValueError(std::string("neighbor_exchange_v2: ") + name + " needs 8 entries, got " +
                     std::to_string(ids.size()));
  }
  std::set<int> seen;
  for (int id : ids) {
    if (id < -1)
      throw ValueError(std::string("neighbor_exchange_v2: ") + name + " has a value below -1");
    if (id >= 0 && !seen.insert(id).second) {
      throw ValueError(std::string("neighbor_exchange_v2: ") + name + " repeats rank " +
                       std::to_string(id));
    }
  }
}

void check_lens(const std::vector<int64_t>& lens, const char* name) {
  if (lens.size() != 4) {
    throw ValueError(std::string("neighbor_exchange_v2: ") + name + " needs 4 entries, got " +
                     std::to_string(lens.size()));
  }
  for (int64_t v : lens) {
    if (v < 0)
      throw ValueError(std::string("neighbor_exchange_v2: ") + name + " has a negative value");
  }
}

void check_spec(const HaloSpec& spec) {
  check_ids(spec.send_rank_ids, "send_rank_ids");
  check_ids(spec.recv_rank_ids, "recv_rank_ids");
  check_lens(spec.send_lens, "send_lens");
  check_lens(spec.recv_lens, "recv_lens");
}

Shape with_hw(const Shape& s, int64_t h, int64_t w) { return {s[0], s[1], h, w}; }

}  // namespace

std::vector<Tensor> neighbor_exchange(const std::vector<Tensor>& inputs,
                                      const std::vector<int>& send_rank_ids,
                                      const std::vector<int>& recv_rank_ids,
                                      const std::vector<Shape>& recv_shapes, std::string_view group,
                                      DType recv_type) {
  if (inputs.size() != send_rank_ids.size() || recv_rank_ids.size() != recv_shapes.size()) {
    throw ValueError("neighbor_exchange: " + std::to_string(inputs.size()) + " inputs for " +
                     std::to_string(send_rank_ids.size()) + " send_rank_ids, " +
                     std::to_string(recv_shapes.size()) + " recv_shapes for " +
                     std::to_string(recv_rank_ids.size()) + " recv_rank_ids");
  }
  const DType dtype = inputs.empty() ? recv_type : inputs[0].dtype();
  return autograd::detail::exchange_lists(inputs, send_rank_ids, recv_rank_ids, recv_shapes, group,
                                          dtype, autograd::detail::kNeighborTag);
}

Tensor neighbor_exchange_v2(const Tensor& x, const HaloSpec& spec, std::string_view group) {
  if (x.dim() != 4) {
    throw ValueError("neighbor_exchange_v2 needs an NCHW (4-d) tensor, got shape " +
                     shape_to_string(x.shape()));
  }
  check_spec(spec);
  const Lens s(spec.send_lens), r(spec.recv_lens);
  const int64_t h = x.size(2), w = x.size(3);
  if (s.top > h || s.bottom > h || s.left > w || s.right > w) {
    throw ValueError("neighbor_exchange_v2: send_lens exceed the tensor's H " + std::to_string(h) +
                     " or W " + std::to_string(w));
  }
  Tensor out =
      Tensor::zeros(with_hw(x.shape(), r.top + h + r.bottom, r.left + w + r.right), x.dtype());
  region(out, {r.top, h}, {r.left, w}).copy_from(x);

  std::vector<P2POp> ops;
  std::vector<int> recv_dirs;
  for (int d = 0; d < 8; ++d) {
    if (spec.send_rank_ids[d] < 0) continue;
    Tensor edge = region(x, send_rows(d, s, h), send_cols(d, s, w)).contiguous();
    ops.emplace_back("isend", edge, spec.send_rank_ids[d], group, autograd::detail::kHaloTag + d);
  }
  for (int d = 0; d < 8; ++d) {
    if (spec.recv_rank_ids[d] < 0) continue;
    const Range rows = recv_rows(d, r, h), cols = recv_cols(d, r, w);
    // The sender sent in its direction opposite(d): that is the tag to match.
    ops.emplace_back("irecv", with_hw(x.shape(), rows.len, cols.len), spec.recv_rank_ids[d], group,
                     autograd::detail::kHaloTag + opposite(d), x.dtype());
    recv_dirs.push_back(d);
  }
  if (ops.empty()) return out;
  auto halos = received_only(ops, batch_isend_irecv(ops));
  for (size_t i = 0; i < halos.size(); ++i) {
    const int d = recv_dirs[i];
    region(out, recv_rows(d, r, h), recv_cols(d, r, w)).copy_from(halos[i]);
  }
  return out;
}

Tensor neighbor_exchange_v2_grad(const Tensor& dy, const HaloSpec& spec, std::string_view group) {
  if (dy.dim() != 4) {
    throw ValueError("neighbor_exchange_v2_grad needs an NCHW (4-d) tensor, got shape " +
                     shape_to_string(dy.shape()));
  }
  check_spec(spec);
  const Lens s(spec.send_lens), r(spec.recv_lens);
  const int64_t h = dy.size(2) - r.top - r.bottom, w = dy.size(3) - r.left - r.right;
  if (h < 0 || w < 0) {
    throw ValueError("neighbor_exchange_v2_grad: shape " + shape_to_string(dy.shape()) +
                     " is smaller than the halo recv_lens");
  }
  Tensor dx = region(dy, {r.top, h}, {r.left, w}).contiguous();

  // Every halo cotangent goes back to the rank it came from; every edge slice this rank
  // sent gets the cotangent its receiver returns, added to the centre's.
  std::vector<P2POp> ops;
  std::vector<int> send_dirs;
  for (int d = 0; d < 8; ++d) {
    if (spec.recv_rank_ids[d] < 0) continue;
    Tensor halo = region(dy, recv_rows(d, r, h), recv_cols(d, r, w)).contiguous();
    ops.emplace_back("isend", halo, spec.recv_rank_ids[d], group,
                     autograd::detail::kHaloGradTag + opposite(d));
  }
  for (int d = 0; d < 8; ++d) {
    if (spec.send_rank_ids[d] < 0) continue;
    const Range rows = send_rows(d, s, h), cols = send_cols(d, s, w);
    ops.emplace_back("irecv", with_hw(dy.shape(), rows.len, cols.len), spec.send_rank_ids[d], group,
                     autograd::detail::kHaloGradTag + d, dy.dtype());
    send_dirs.push_back(d);
  }
  if (ops.empty()) return dx;
  auto back = received_only(ops, batch_isend_irecv(ops));
  for (size_t i = 0; i < back.size(); ++i) {
    const int d = send_dirs[i];
    add_into(region(dx, send_rows(d, s, h), send_cols(d, s, w)), back[i]);
  }
  return dx;
}

}  // namespace collie

namespace collie::autograd::detail {

std::vector<Tensor> exchange_lists(const std::vector<Tensor>& inputs,
                                   const std::vector<int>& send_rank_ids,
                                   const std::vector<int>& recv_rank_ids,
                                   const std::vector<Shape>& recv_shapes, std::string_view group,
                                   DType dtype, int tag) {
  std::vector<P2POp> ops;
  for (size_t i = 0; i < inputs.size(); ++i)
    ops.emplace_back("isend", inputs[i], send_rank_ids[i], group, tag);
  for (size_t i = 0; i < recv_shapes.size(); ++i) {
    ops.emplace_back("irecv", recv_shapes[i], recv_rank_ids[i], group, tag, dtype);
  }
  if (ops.empty()) return {};
  return received_only(ops, batch_isend_irecv(ops));
}

}  // namespace collie::autograd::detail
