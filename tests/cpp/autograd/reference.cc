// The single-process reference collectives (see reference.h).
#include "reference.h"

namespace collie::testing::ref {

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  if (dim == 0) return t.slice(start, start + len).contiguous();
  return t.transpose(0, dim).slice(start, start + len).transpose(0, dim).contiguous();
}

Tensor cat(const std::vector<Tensor>& parts, int64_t dim) {
  if (dim == 0) return Tensor::cat(parts);
  std::vector<Tensor> moved;
  for (const Tensor& p : parts) moved.push_back(p.transpose(0, dim).contiguous());
  return Tensor::cat(moved).transpose(0, dim).contiguous();
}

Tensor add(const Tensor& a, const Tensor& b) {
  auto av = a.to_double_vector(), bv = b.to_double_vector();
  RCHECK_EQ(av.size(), bv.size()) << "ref::add";
  for (size_t i = 0; i < av.size(); ++i) av[i] += bv[i];
  return Tensor::from_vector(av, a.shape());
}

namespace {

size_t size_of(const World& x) { return x.size(); }

Tensor sum_over(const std::vector<Tensor>& parts) {
  Tensor acc = parts[0].contiguous().clone();
  for (size_t i = 1; i < parts.size(); ++i) acc = add(acc, parts[i]);
  return acc;
}

Tensor as_rows(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

}  // namespace

World all_reduce_sum(const World& x) {
  std::vector<Tensor> all;
  for (const auto& r : x) all.push_back(r[0]);
  Tensor s = sum_over(all);
  return World(size_of(x), {s});
}

World all_gather(const World& x) {
  std::vector<Tensor> all;
  for (const auto& r : x) all.push_back(as_rows(r[0]));
  return World(size_of(x), {Tensor::cat(all)});
}

World reduce_scatter_sum(const World& x) {
  const size_t n = size_of(x);
  World y(n);
  for (size_t r = 0; r < n; ++r) {
    std::vector<Tensor> blocks;
    for (const auto& j : x) {
      const int64_t b = j[0].size(0) / static_cast<int64_t>(n);
      blocks.push_back(narrow(j[0], 0, static_cast<int64_t>(r) * b, b));
    }
    y[r] = {sum_over(blocks)};
  }
  return y;
}

World broadcast(const World& x, int root) {
  return World(size_of(x), {x[static_cast<size_t>(root)][0]});
}

World reduce_sum(const World& x, int root) {
  World y(size_of(x), {Tensor::zeros({1}, DType::Float64)});
  y[static_cast<size_t>(root)] = all_reduce_sum(x)[0];
  return y;
}

World gather(const World& x, int root) {
  World y(size_of(x), {Tensor::zeros({1}, DType::Float64)});
  y[static_cast<size_t>(root)] = all_gather(x)[0];
  return y;
}

World scatter(const World& x, int root) {
  const size_t n = size_of(x);
  const Tensor& src = x[static_cast<size_t>(root)][0];
  const int64_t b = src.size(0) / static_cast<int64_t>(n);
  World y(n);
  for (size_t r = 0; r < n; ++r) y[r] = {narrow(src, 0, static_cast<int64_t>(r) * b, b)};
  return y;
}

World all_to_all(const World& x, int64_t split_dim, int64_t concat_dim) {
  const size_t n = size_of(x);
  World y(n);
  for (size_t r = 0; r < n; ++r) {
    std::vector<Tensor> parts;
    for (const auto& j : x) {
      const int64_t b = j[0].size(split_dim) / static_cast<int64_t>(n);
      parts.push_back(narrow(j[0], split_dim, static_cast<int64_t>(r) * b, b));
    }
    y[r] = {cat(parts, concat_dim)};
  }
  return y;
}

World all_to_all_v(const World& x, const std::vector<std::vector<int64_t>>& counts) {
  const size_t n = size_of(x);
  World y(n);
  for (size_t r = 0; r < n; ++r) {
    std::vector<Tensor> parts;
    for (size_t j = 0; j < n; ++j) {
      int64_t off = 0;
      for (size_t k = 0; k < r; ++k) off += counts[j][k];
      parts.push_back(narrow(x[j][0].reshape({x[j][0].numel()}), 0, off, counts[j][r]));
    }
    y[r] = {Tensor::cat(parts)};
  }
  return y;
}

World all_to_all_single(const World& x, const std::vector<std::vector<int64_t>>& rows,
                        const std::vector<Shape>& output_shapes) {
  const size_t n = size_of(x);
  World y(n);
  for (size_t r = 0; r < n; ++r) {
    std::vector<Tensor> parts;
    for (size_t j = 0; j < n; ++j) {
      int64_t off = 0;
      for (size_t k = 0; k < r; ++k) off += rows[j][k];
      parts.push_back(narrow(x[j][0], 0, off, rows[j][r]));
    }
    y[r] = {Tensor::cat(parts).reshape(output_shapes[r])};
  }
  return y;
}

World all_to_all_list(const World& x) {
  const size_t n = size_of(x);
  World y(n);
  for (size_t r = 0; r < n; ++r) {
    for (size_t j = 0; j < n; ++j) y[r].push_back(x[j][r]);
  }
  return y;
}

World all_to_all_v_c(const World& x, const std::vector<int64_t>& matrix) {
  const size_t n = size_of(x);
  World y(n);
  for (size_t r = 0; r < n; ++r) {
    std::vector<Tensor> parts;
    int64_t got = 0;
    for (size_t j = 0; j < n; ++j) {
      int64_t off = 0;
      for (size_t k = 0; k < r; ++k) off += matrix[j * n + k];
      const int64_t c = matrix[j * n + r];
      parts.push_back(narrow(x[j][0], 0, off, c));
      got += c;
    }
    const Tensor& prior = x[r][1];
    parts.push_back(narrow(prior, 0, got, prior.size(0) - got));
    y[r] = {Tensor::cat(parts)};
  }
  return y;
}

World all_gather_v(const World& x) { return all_gather(x); }

World reduce_scatter_v(const World& x, const std::vector<int64_t>& rows_per_rank) {
  const size_t n = size_of(x);
  World y(n);
  int64_t off = 0;
  for (size_t r = 0; r < n; ++r) {
    std::vector<Tensor> blocks;
    for (const auto& j : x) blocks.push_back(narrow(j[0], 0, off, rows_per_rank[r]));
    y[r] = {sum_over(blocks)};
    off += rows_per_rank[r];
  }
  return y;
}

World halo_exchange(const World& x, const std::vector<HaloSpec>& specs) {
  // Direction d: row offset and column offset of the neighbour, top = -1 row.
  const int dr[8] = {-1, -1, 0, 1, 1, 1, 0, -1};
  const int dc[8] = {0, 1, 1, 1, 0, -1, -1, -1};
  const size_t n = size_of(x);
  World y(n);
  for (size_t r = 0; r < n; ++r) {
    const Tensor& xr = x[r][0];
    const HaloSpec& s = specs[r];
    const int64_t h = xr.size(2), w = xr.size(3);
    const int64_t rt = s.recv_lens[0], rb = s.recv_lens[1], rl = s.recv_lens[2],
                  rr = s.recv_lens[3];
    // Build the padded output as a 3x3 grid of blocks: rows (top, centre, bottom) x cols.
    auto block = [&](int d) -> Tensor {  // the halo received from direction d
      const int64_t rows = dr[d] < 0 ? rt : (dr[d] > 0 ? rb : h);
      const int64_t cols = dc[d] < 0 ? rl : (dc[d] > 0 ? rr : w);
      const int peer = s.recv_rank_ids[static_cast<size_t>(d)];
      if (peer < 0) return Tensor::zeros({xr.size(0), xr.size(1), rows, cols}, DType::Float64);
      const Tensor& xp = x[static_cast<size_t>(peer)][0];
      const HaloSpec& sp = specs[static_cast<size_t>(peer)];
      const int e = (d + 4) % 8;  // the direction in which the peer sent it
      const int64_t ph = xp.size(2), pw = xp.size(3);
      const int64_t r0 = dr[e] < 0 ? 0 : (dr[e] > 0 ? ph - sp.send_lens[1] : 0);
      const int64_t c0 = dc[e] < 0 ? 0 : (dc[e] > 0 ? pw - sp.send_lens[3] : 0);
      return narrow(narrow(xp, 2, r0, rows), 3, c0, cols);
    };
    // Grid positions -> direction (-1 = the centre).
    const int grid[3][3] = {{7, 0, 1}, {6, -1, 2}, {5, 4, 3}};
    std::vector<Tensor> bands;
    for (const auto& row : grid) {
      std::vector<Tensor> cells;
      for (int d : row) cells.push_back(d < 0 ? xr : block(d));
      bands.push_back(cat(cells, 3));
    }
    y[r] = {cat(bands, 2)};
  }
  return y;
}

}  // namespace collie::testing::ref
