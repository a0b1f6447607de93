// Reading a rule's attributes with checks (for get_bprop).
//
// Rules are looked up by name with a map of attributes, often from a language binding,
// so a typo or a wrong type must fail loudly at get_bprop time with the accepted names,
// never fall back to a default silently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collie/autograd.h"
#include "collie/comm.h"

namespace collie::autograd::detail {

class AttrReader {
 public:
  // ValueError if `attrs` has a name not in `accepted`.
  AttrReader(std::string_view op, const Attrs& attrs, const std::vector<std::string>& accepted);

  bool has(std::string_view name) const;
  // Each getter: ValueError when the attribute is absent and has no default, or has
  // another type. Integers are accepted where a double is expected.
  int64_t get_int(std::string_view name, std::optional<int64_t> def = std::nullopt) const;
  double get_double(std::string_view name, std::optional<double> def = std::nullopt) const;
  bool get_bool(std::string_view name, std::optional<bool> def = std::nullopt) const;
  std::string get_string(std::string_view name,
                         std::optional<std::string> def = std::nullopt) const;
  std::vector<int64_t> get_ints(std::string_view name,
                                std::optional<std::vector<int64_t>> def = std::nullopt) const;
  std::vector<std::string> get_strings(
      std::string_view name, std::optional<std::vector<std::string>> def = std::nullopt) const;
  std::vector<Shape> get_shapes(std::string_view name,
                                std::optional<std::vector<Shape>> def = std::nullopt) const;
  // "op" as a string ("sum", "prod", "min", "max"), SUM when absent.
  ReduceOp reduce_op() const;
  // "group", WORLD when absent.
  std::string group() const;
  // An int attribute that must fit an int (ranks, tags).
  int get_rank_like(std::string_view name, std::optional<int64_t> def = std::nullopt) const;

  const std::string& op() const { return op_; }

 private:
  const AttrValue* find(std::string_view name) const;
  [[noreturn]] void missing(std::string_view name) const;
  [[noreturn]] void wrong_type(std::string_view name, std::string_view expected) const;

  std::string op_;
  const Attrs& attrs_;
};

}  // namespace collie::autograd::detail
