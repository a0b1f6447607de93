// A single-process reference of every collective: a pure function from what each rank
// holds to what each rank gets (autodiff.md §5.1). Written from the definitions with
// tensor slicing only — independent of collie's implementation — so the adjoint tests
// can compare collie's distributed backward with the reference's exact adjoint
// (adjoint_by_columns) element by element. All indices are GROUP ranks; every world[r]
// holds one tensor unless said otherwise. float64.
#pragma once

#include <vector>

#include "ag_test_util.h"

namespace collie::testing::ref {

// Rows / a dim of a tensor, as new contiguous tensors.
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t len);
Tensor cat(const std::vector<Tensor>& parts, int64_t dim);
Tensor add(const Tensor& a, const Tensor& b);

World all_reduce_sum(const World& x);
World all_gather(const World& x);
World reduce_scatter_sum(const World& x);
World broadcast(const World& x, int root);
World reduce_sum(const World& x, int root);  // non-root: shape [1] zeros
World gather(const World& x, int root);      // non-root: shape [1] zeros
World scatter(const World& x, int root);
World all_to_all(const World& x, int64_t split_dim, int64_t concat_dim);
// counts[i][j] = elements group rank i sends to j (flat).
World all_to_all_v(const World& x, const std::vector<std::vector<int64_t>>& counts);
// rows[i][j] = rows i sends to j; output of rank j: its rows in sender order, then
// reshaped to output_shapes[j].
World all_to_all_single(const World& x, const std::vector<std::vector<int64_t>>& rows,
                        const std::vector<Shape>& output_shapes);
// world[r] holds N tensors; rank r's output j is rank j's input r.
World all_to_all_list(const World& x);
// world[r] = [input, prior output]; output = prior with its first rows replaced by what
// arrives (matrix[i*N + j] rows from i to j, in sender order).
World all_to_all_v_c(const World& x, const std::vector<int64_t>& matrix);
World all_gather_v(const World& x);
World reduce_scatter_v(const World& x, const std::vector<int64_t>& rows_per_rank);
// The NeighborExchangeV2 halo exchange, each rank with its own spec (world ranks = group
// ranks here: used on the world group only).
World halo_exchange(const World& x, const std::vector<HaloSpec>& specs);

}  // namespace collie::testing::ref
