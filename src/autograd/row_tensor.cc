// Row-sparse tensors (collie/comm_ext.h): densify, coalesce, and the SUM over a group
// by gathering (indices, values) with uneven row counts.
#include <map>
#include <string>

#include "collie/comm_ext.h"
#include "collie/errors.h"

namespace collie {
namespace {

int64_t row_numel(const Shape& dense_shape) {
  int64_t n = 1;
  for (size_t i = 1; i < dense_shape.size(); ++i) n *= dense_shape[i];
  return n;
}

void check_rows(const RowTensor& rows, const char* what) {
  if (rows.dense_shape.empty())
    throw ValueError(std::string(what) + ": dense_shape must have a dim 0");
  const int64_t nnz = rows.indices.numel();
  if (rows.indices.dim() != 1 || rows.values.dim() == 0 || rows.values.size(0) != nnz ||
      rows.values.numel() != nnz * row_numel(rows.dense_shape)) {
    throw ValueError(std::string(what) + ": indices " + shape_to_string(rows.indices.shape()) +
                     " and values " + shape_to_string(rows.values.shape()) +
                     " do not describe rows of " + shape_to_string(rows.dense_shape));
  }
}

}  // namespace

Tensor to_dense(const RowTensor& rows) {
  check_rows(rows, "to_dense");
  const int64_t width = row_numel(rows.dense_shape);
  std::vector<double> dense(static_cast<size_t>(rows.dense_shape[0] * width), 0.0);
  const std::vector<double> idx = rows.indices.to_double_vector();
  const std::vector<double> val = rows.values.to_double_vector();
  for (size_t i = 0; i < idx.size(); ++i) {
    const auto row = static_cast<int64_t>(idx[i]);
    if (row < 0 || row >= rows.dense_shape[0]) {
      throw ValueError("to_dense: index " + std::to_string(row) + " out of range for " +
                       std::to_string(rows.dense_shape[0]) + " rows");
    }
    for (int64_t k = 0; k < width; ++k) {
      dense[static_cast<size_t>(row * width + k)] +=
          val[i * static_cast<size_t>(width) + static_cast<size_t>(k)];
    }
  }
  return Tensor::from_vector(dense, rows.dense_shape).to(rows.values.dtype());
}

RowTensor coalesce(const RowTensor& rows) {
  check_rows(rows, "coalesce");
  const int64_t width = row_numel(rows.dense_shape);
  const std::vector<double> idx = rows.indices.to_double_vector();
  const std::vector<double> val = rows.values.to_double_vector();
  // Ordered by index; repeated rows summed in the order they appear.
  std::map<int64_t, std::vector<double>> merged;
  for (size_t i = 0; i < idx.size(); ++i) {
    auto& acc = merged.try_emplace(static_cast<int64_t>(idx[i]), static_cast<size_t>(width), 0.0)
                    .first->second;
    for (int64_t k = 0; k < width; ++k)
      acc[static_cast<size_t>(k)] += val[i * static_cast<size_t>(width) + static_cast<size_t>(k)];
  }
  std::vector<int64_t> out_idx;
  std::vector<double> out_val;
  for (const auto& [row, v] : merged) {
    out_idx.push_back(row);
    out_val.insert(out_val.end(), v.begin(), v.end());
  }
  Shape value_shape = rows.dense_shape;
  value_shape[0] = static_cast<int64_t>(out_idx.size());
  return {Tensor::from_vector(out_idx),
          Tensor::from_vector(out_val, value_shape).to(rows.values.dtype()), rows.dense_shape};
}

RowTensor all_reduce_rows(const RowTensor& rows, std::string_view group) {
  check_rows(rows, "all_reduce_rows");
  // Concatenated (indices, values) of every rank ARE the sum once densified; coalescing
  // adds the repeated rows so the result is canonical.
  Tensor indices = all_gather_v(rows.indices.to(DType::Int64), group);
  Tensor values = all_gather_v(rows.values, group);
  return coalesce({indices, values, rows.dense_shape});
}

}  // namespace collie
