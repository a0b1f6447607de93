#include "values.h"

#include <algorithm>
#include <sstream>

#include "check.h"

namespace collie::testing {
namespace {

template <typename T>
T to_element(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
double from_element(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

bool is_signed_kind(DType dt) { return dt != DType::Bool && dt != DType::UInt8; }

}  // namespace

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> kAll = {DType::Bool,    DType::Int8,     DType::UInt8,
                                          DType::Int16,   DType::Int32,    DType::Int64,
                                          DType::Float16, DType::BFloat16, DType::Float32,
                                          DType::Float64};
  return kAll;
}

const std::vector<ReduceOp>& all_reduce_ops() {
  static const std::vector<ReduceOp> kOps = {ReduceOp::SUM, ReduceOp::PROD, ReduceOp::MIN,
                                             ReduceOp::MAX};
  return kOps;
}

const std::vector<int64_t>& element_counts() {
  static const std::vector<int64_t> kCounts = {0, 1, 37, 5000};
  return kCounts;
}

std::vector<std::pair<std::string, std::string>> small_chunk_env() {
  return {{"COLLIE_SHM_SLOT_BYTES", "4096"}, {"COLLIE_P2P_RING_BYTES", "4096"}};
}

double rank_value(DType dtype, ReduceOp op, int rank, int64_t i) {
  const bool multiplicative = op == ReduceOp::PROD;
  if (dtype == DType::Bool) {
    bool and_like = op == ReduceOp::PROD || op == ReduceOp::MIN;
    return and_like ? (i % 5 != rank) : (i % 5 == rank);
  }
  if (multiplicative) {
    double magnitude = 1 + (i + rank) % 2;
    if (!is_signed_kind(dtype)) return magnitude;
    return ((i + 2 * rank) % 3 == 0) ? -magnitude : magnitude;
  }
  double v = static_cast<double>((7 * i + 13 * rank) % 31);
  return is_signed_kind(dtype) ? v - 15 : v;
}

namespace {
// acc op v, as the library reduces dtype's values (bool: SUM is or, PROD and).
double combine(DType dtype, ReduceOp op, double acc, double v) {
  switch (op) {
    case ReduceOp::SUM:
      return dtype == DType::Bool ? double(acc != 0 || v != 0) : acc + v;
    case ReduceOp::PROD:
      return dtype == DType::Bool ? double(acc != 0 && v != 0) : acc * v;
    case ReduceOp::MIN:
      return std::min(acc, v);
    case ReduceOp::MAX:
      return std::max(acc, v);
  }
  return acc;
}
}  // namespace

double reduce_values(DType dtype, ReduceOp op, const std::vector<double>& values) {
  if (values.empty()) return 0;
  double acc = values[0];
  for (size_t k = 1; k < values.size(); ++k) acc = combine(dtype, op, acc, values[k]);
  return acc;
}

// Called once per element checked: folds without a vector (one was a malloc per
// element, which ASan made a third of the reduction tests' time).
double expected_reduction(DType dtype, ReduceOp op, const std::vector<int>& ranks, int64_t i) {
  if (ranks.empty()) return 0;
  double acc = rank_value(dtype, op, ranks[0], i);
  for (size_t k = 1; k < ranks.size(); ++k) {
    acc = combine(dtype, op, acc, rank_value(dtype, op, ranks[k], i));
  }
  return acc;
}

double pattern_value(DType dtype, int key, int64_t i) {
  if (dtype == DType::Bool) return (i + key) % 3 == 0;
  double v = static_cast<double>((5 * i + 17 * static_cast<int64_t>(key)) % 101);
  return dtype == DType::UInt8 ? v : v - 50;
}

Tensor make_tensor(const Shape& shape, DType dtype, const std::function<double(int64_t)>& value) {
  Tensor t = Tensor::empty(shape, dtype);
  const int64_t n = t.numel();
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.data_ptr());
    for (int64_t i = 0; i < n; ++i) p[i] = to_element<T>(value(i));
  });
  return t;
}

std::vector<double> values_of(const Tensor& t) {
  if (!t.is_contiguous()) return t.to_double_vector();
  const int64_t n = t.numel();
  std::vector<double> out(static_cast<size_t>(n));
  if (n == 0) return out;
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(t.data_ptr());
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = from_element<T>(p[i]);
  });
  return out;
}

void check_tensor(const Tensor& got, DType dtype, const Shape& shape,
                  const std::function<double(int64_t)>& expected, const std::string& what) {
  const std::string where = what + " [" + std::string(dtype_name(dtype)) + "]";
  RCHECK_EQ(got.dtype(), dtype) << where;
  RCHECK_EQ(got.shape(), shape) << where;
  RCHECK(got.is_contiguous()) << where << ": outputs must be contiguous";
  const int64_t n = got.numel();
  RCHECK_EQ(n, shape_numel(shape)) << where;
  std::ostringstream mismatches;
  int64_t bad = 0;
  // Read in place: a copy as doubles of a 9 MiB int8 output was 75 MB to
  // allocate and fault in for each check.
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(got.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      double want = expected(i);
      if (dtype == DType::Bool) want = want != 0;
      const double value = from_element<T>(p[i]);
      if (value != want) {
        if (bad < 5) mismatches << " [" << i << "] got " << value << " want " << want << ";";
        ++bad;
      }
    }
  });
  RCHECK_EQ(bad, int64_t{0}) << where << ", shape " << shape_to_string(shape) << ": " << bad
                             << " of " << n << " elements differ:" << mismatches.str();
}

std::vector<int> iota_ranks(int n) {
  std::vector<int> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

}  // namespace collie::testing
