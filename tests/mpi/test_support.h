// Helpers shared by the backend tests in this folder: typed fill and check of
// 1-D tensors through a double-valued function, a byte hash, and a failure log.
//
// These programs run under mpirun as well as under `collie run`, so they use only
// collie's public API and report mismatches by printing, not through gtest.
#pragma once

#include <collie/collie.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace collie_test {

using collie::DType;
using collie::Tensor;

template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, collie::Half> || std::is_same_v<T, collie::BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, collie::Half> || std::is_same_v<T, collie::BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

// A contiguous tensor of `shape` whose flat element i is f(i).
inline Tensor make_tensor(const collie::Shape& shape, DType dtype,
                          const std::function<double(int64_t)>& f) {
  Tensor t = Tensor::empty(shape, dtype);
  const int64_t n = t.numel();
  collie::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.data_ptr());
    for (int64_t i = 0; i < n; ++i) p[i] = from_double<T>(f(i));
  });
  return t;
}

// Flat element i of a contiguous tensor as a double.
inline double element(const Tensor& t, int64_t i) {
  return collie::dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return to_double(static_cast<const T*>(t.data_ptr())[i]);
  });
}

// FNV-1a over a tensor's bytes (dtype and shape included, so empty tensors differ by shape).
inline uint64_t hash_tensor(const Tensor& t) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  };
  const uint8_t d = static_cast<uint8_t>(t.dtype());
  mix(&d, 1);
  for (int64_t s : t.shape()) mix(&s, sizeof s);
  Tensor c = t.contiguous();
  if (c.nbytes() != 0) mix(c.data_ptr(), c.nbytes());
  return h;
}

// Counts checks and failures of one rank; prints the first few details of each failure.
class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}

  // Checks shape and every element of `t` against expected(i), exactly.
  void tensor(const std::string& what, const Tensor& t, const collie::Shape& shape, DType dtype,
              const std::function<double(int64_t)>& expected) {
    ++checks_;
    if (t.dtype() != dtype || t.shape() != shape) {
      fail(what, "got " + std::string(collie::dtype_name(t.dtype())) + " " +
                     collie::shape_to_string(t.shape()) + ", expected " +
                     std::string(collie::dtype_name(dtype)) + " " + collie::shape_to_string(shape));
      return;
    }
    Tensor c = t.contiguous();
    int shown = 0, bad = 0;
    std::string detail;
    for (int64_t i = 0; i < c.numel(); ++i) {
      double got = element(c, i), want = expected(i);
      if (got == want) continue;
      ++bad;
      if (shown++ < 3) {
        detail += " [" + std::to_string(i) + "] = " + fmt(got) + " (expected " + fmt(want) + ");";
      }
    }
    if (bad != 0) fail(what, std::to_string(bad) + " element(s) wrong:" + detail);
  }

  void truth(const std::string& what, bool ok, const std::string& detail) {
    ++checks_;
    if (!ok) fail(what, detail);
  }

  void fail(const std::string& what, const std::string& detail) {
    ++failures_;
    if (failures_ <= 50)
      std::fprintf(stderr, "rank %d: MISMATCH in %s: %s\n", rank_, what.c_str(), detail.c_str());
  }

  long checks() const { return checks_; }
  long failures() const { return failures_; }

 private:
  static std::string fmt(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
  }
  int rank_;
  long checks_ = 0;
  long failures_ = 0;
};

inline const DType kAllDTypes[] = {DType::Bool,    DType::Int8,   DType::UInt8,   DType::Int16,
                                   DType::Int32,   DType::Int64,  DType::Float16, DType::BFloat16,
                                   DType::Float32, DType::Float64};

}  // namespace collie_test
