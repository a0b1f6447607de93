#include "values.h"

#include <algorithm>
#include <sstream>

#include "check.h"

namespace collie::testing {
namespace {

// The element loops of make_tensor and check_tensor run over every element of
// every test tensor (up to 36 M of them); instrumented by the sanitizers they
// were a third of the data-moving tests' time. Their bounds are those of the
// tensor and the chunk, and the memory they touch is checked where it matters,
// in the library's own accesses to it: so they and the conversions they inline
// (which must carry the same attributes to be inlined) are not instrumented.
#define COLLIE_HARNESS_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

template <typename T>
COLLIE_HARNESS_UNINSTRUMENTED T to_element(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
COLLIE_HARNESS_UNINSTRUMENTED double from_element(T v) {
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

namespace detail {

namespace {

template <typename T>
COLLIE_HARNESS_UNINSTRUMENTED void store_as(T* out, const double* values, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = to_element<T>(values[k]);
}

// An element as a double; a bool's byte as it is, so that a byte other than 0
// or 1 (which the library must never write) differs from every wanted value.
template <typename T>
COLLIE_HARNESS_UNINSTRUMENTED double element_value(const T* p, int64_t k) {
  if constexpr (std::is_same_v<T, bool>) {
    return reinterpret_cast<const unsigned char*>(p)[k];
  } else {
    return from_element<T>(p[k]);
  }
}

// Index of the first element of got[0, n) that differs from want, or n.
template <typename T>
COLLIE_HARNESS_UNINSTRUMENTED int64_t first_difference(const T* got, const double* want,
                                                       int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const double wanted = std::is_same_v<T, bool> ? double(want[k] != 0) : want[k];
    if (element_value(got, k) != wanted) return k;
  }
  return n;
}

}  // namespace

void store_values(Tensor& t, int64_t first, const double* values, int64_t n) {
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    store_as(static_cast<T*>(t.data_ptr()) + first, values, n);
  });
}

MismatchLog::MismatchLog(const Tensor& got, DType dtype, const Shape& shape,
                         const std::string& what)
    : where_(what + " [" + std::string(dtype_name(dtype)) + "]"),
      shape_(shape),
      numel_(got.numel()) {
  RCHECK_EQ(got.dtype(), dtype) << where_;
  RCHECK_EQ(got.shape(), shape) << where_;
  RCHECK(got.is_contiguous()) << where_ << ": outputs must be contiguous";
  RCHECK_EQ(numel_, shape_numel(shape)) << where_;
}

void MismatchLog::add(int64_t index, double got, double want) {
  if (bad_ < 5) first_few_ << " [" << index << "] got " << got << " want " << want << ";";
  ++bad_;
}

void MismatchLog::finish() {
  RCHECK_EQ(bad_, int64_t{0}) << where_ << ", shape " << shape_to_string(shape_) << ": " << bad_
                              << " of " << numel_ << " elements differ:" << first_few_.str();
}

// Reads in place: a copy as doubles of a 9 MiB int8 output was 75 MB to
// allocate and fault in for each check.
void compare_values(const Tensor& got, int64_t first, const double* want, int64_t n,
                    MismatchLog& log) {
  dispatch_dtype(got.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(got.data_ptr()) + first;
    for (int64_t k = first_difference(p, want, n); k < n;) {
      const double wanted = std::is_same_v<T, bool> ? double(want[k] != 0) : want[k];
      log.add(first + k, element_value(p, k), wanted);
      ++k;
      k += first_difference(p + k, want + k, n - k);
    }
  });
}

}  // namespace detail

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

std::vector<int> iota_ranks(int n) {
  std::vector<int> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

}  // namespace collie::testing
