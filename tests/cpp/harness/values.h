// collie/testing values.h — closed-form test data and exact comparisons.
//
// Every rank builds its input from a formula of (rank, index) and checks the output
// against the same formula evaluated for the ranks it should have come from. Values are
// small integers, so they are exact in every dtype (int8 included: |sum over 4 ranks| <= 60,
// |product| <= 16; bfloat16 is exact up to 256), and comparisons are exact.
//
// Example (inside a rank of run_ranks):
//   auto x = make_tensor({37}, dt, [&](int64_t i) { return rank_value(dt, op, rank, i); });
//   auto [y, h] = collie::all_reduce(x, op);
//   check_tensor(y, dt, {37}, [&](int64_t i) { return expected_reduction(dt, op, world, i); },
//                "all_reduce");
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "collie/comm.h"
#include "collie/dtype.h"
#include "collie/tensor.h"

namespace collie::testing {

// bool, int8, uint8, int16, int32, int64, float16, bfloat16, float32, float64.
const std::vector<DType>& all_dtypes();
// SUM, PROD, MIN, MAX.
const std::vector<ReduceOp>& all_reduce_ops();
// Element counts every op is run with: 0, 1, an odd count and one larger than a 4 KiB
// staging slot in every dtype (5000 elements).
const std::vector<int64_t>& element_counts();
// Environment that shrinks the engine's staging slots and p2p rings to 4 KiB, so that
// 5000-element tensors are moved in many chunks.
std::vector<std::pair<std::string, std::string>> small_chunk_env();

// The value rank `rank` contributes at flat index i to a reduction with `op`.
//   bool:  SUM/MAX: i % 5 == rank;  PROD/MIN: i % 5 != rank (so or/and both vary)
//   uint8: SUM/MIN/MAX: (7i + 13 rank) % 31;  PROD: 1 + (i + rank) % 2
//   other: SUM/MIN/MAX: (7i + 13 rank) % 31 - 15;  PROD: +-(1 + (i + rank) % 2)
double rank_value(DType dtype, ReduceOp op, int rank, int64_t i);
// Reduction of `values` as the engine defines it (bool: SUM/MAX = or, PROD/MIN = and).
double reduce_values(DType dtype, ReduceOp op, const std::vector<double>& values);
// Expected element i of a reduction over the given (world) ranks' rank_value.
double expected_reduction(DType dtype, ReduceOp op, const std::vector<int>& ranks, int64_t i);

// A data pattern for ops that move data: distinct per key (usually a rank), small integers.
//   bool: (i + key) % 3 == 0;  uint8: (5i + 17 key) % 101;  other: (5i + 17 key) % 101 - 50
// (Inline: tests evaluate it for every element of tensors of up to 36 M elements.)
inline double pattern_value(DType dtype, int key, int64_t i) {
  if (dtype == DType::Bool) return (i + key) % 3 == 0;
  const double v = static_cast<double>((5 * i + 17 * static_cast<int64_t>(key)) % 101);
  return dtype == DType::UInt8 ? v : v - 50;
}

namespace detail {
// make_tensor and check_tensor evaluate their formula a chunk of elements at a
// time into doubles, and convert or compare each chunk in values.cc: the
// formula's call is then inlined into the loop instead of going through a
// std::function per element (which under ASan was most of the data-moving
// tests' time), while the per-dtype loops are compiled once.
inline constexpr int64_t kValueChunk = 512;

// check_tensor's checks of dtype, shape and layout (at construction), and its
// report of the mismatching elements.
class MismatchLog {
 public:
  MismatchLog(const Tensor& got, DType dtype, const Shape& shape, const std::string& what);
  void add(int64_t index, double got, double want);
  void finish();  // throws CheckFailure if any element differed

 private:
  std::string where_;
  Shape shape_;
  int64_t numel_;
  int64_t bad_ = 0;
  std::ostringstream first_few_;
};

// Writes values[0, n) to elements [first, first + n) of contiguous tensor t.
void store_values(Tensor& t, int64_t first, const double* values, int64_t n);
// Compares elements [first, first + n) of contiguous tensor got with want[0, n)
// and logs those that differ.
void compare_values(const Tensor& got, int64_t first, const double* want, int64_t n,
                    MismatchLog& log);
}  // namespace detail

// A new contiguous tensor of `shape` and `dtype` with element i (row-major) = value(i),
// value being any callable taking int64_t and returning a number.
template <typename ValueFn>
Tensor make_tensor(const Shape& shape, DType dtype, ValueFn&& value) {
  Tensor t = Tensor::empty(shape, dtype);
  const int64_t n = t.numel();
  double chunk[detail::kValueChunk];
  for (int64_t first = 0; first < n; first += detail::kValueChunk) {
    const int64_t count = std::min(detail::kValueChunk, n - first);
    for (int64_t k = 0; k < count; ++k) chunk[k] = static_cast<double>(value(first + k));
    detail::store_values(t, first, chunk, count);
  }
  return t;
}

// Elements in row-major order as doubles (any strides).
std::vector<double> values_of(const Tensor& t);

// Checks dtype, shape, that the tensor is contiguous, and every element against expected(i)
// (exactly; bool elements against expected(i) != 0). Throws CheckFailure naming `what`, the
// dtype and the first mismatches.
template <typename ExpectedFn>
void check_tensor(const Tensor& got, DType dtype, const Shape& shape, ExpectedFn&& expected,
                  const std::string& what) {
  detail::MismatchLog log(got, dtype, shape, what);
  const int64_t n = got.numel();
  double chunk[detail::kValueChunk];
  for (int64_t first = 0; first < n; first += detail::kValueChunk) {
    const int64_t count = std::min(detail::kValueChunk, n - first);
    for (int64_t k = 0; k < count; ++k) chunk[k] = static_cast<double>(expected(first + k));
    detail::compare_values(got, first, chunk, count, log);
  }
  log.finish();
}

// 0..n-1
std::vector<int> iota_ranks(int n);

}  // namespace collie::testing
