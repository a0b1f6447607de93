// DType metadata: sizes, names, parsing, and the dtype check used by Tensor::data<T>().
#include "collie/dtype.h"

#include <string>

#include "collie/errors.h"
#include "collie/tensor.h"

namespace collie {

void detail::throw_invalid_dtype(DType dtype) {
  throw ValueError("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "bool";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  detail::throw_invalid_dtype(dtype);
}

DType parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto dtype = static_cast<DType>(i);
    if (name == dtype_name(dtype)) return dtype;
  }
  // The C / numpy aliases people type by habit.
  if (name == "float") return DType::Float32;
  if (name == "double") return DType::Float64;
  if (name == "half") return DType::Float16;
  if (name == "int") return DType::Int32;
  if (name == "long") return DType::Int64;
  throw ValueError("unknown dtype '" + std::string(name) +
                   "'; expected one of bool, int8, uint8, int16, int32, int64, float16, "
                   "bfloat16, float32, float64");
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float32 ||
         dtype == DType::Float64;
}

void check_dtype_matches(DType actual, DType requested, const char* what) {
  if (actual == requested) return;
  throw TypeError(std::string(what) + ": the tensor's dtype is " + std::string(dtype_name(actual)) +
                  " but " + std::string(dtype_name(requested)) + " was requested");
}

}  // namespace collie
