#include "collie/comm.h"
#include "collie/errors.h"

namespace collie {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "sum";
    case ReduceOp::PROD:
      return "prod";
    case ReduceOp::MIN:
      return "min";
    case ReduceOp::MAX:
      return "max";
  }
  return "unknown";
}

ReduceOp parse_reduce_op(std::string_view name, std::string_view function) {
  if (name == "sum") return ReduceOp::SUM;
  if (name == "prod") return ReduceOp::PROD;
  if (name == "min") return ReduceOp::MIN;
  if (name == "max") return ReduceOp::MAX;
  // MindSpore raises TypeError (not ValueError) for a bad op value.
  throw TypeError("For " + std::string(function) +
                  ", the input op value must be one of sum, prod, min, max, but got '" +
                  std::string(name) + "'");
}

}  // namespace collie
