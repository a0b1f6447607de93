// Attribute checks for get_bprop (see attrs.h).
#include "autograd/attrs.h"

#include <algorithm>
#include <limits>

#include "collie/errors.h"

namespace collie::autograd::detail {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

}  // namespace

AttrReader::AttrReader(std::string_view op, const Attrs& attrs,
                       const std::vector<std::string>& accepted)
    : op_(op), attrs_(attrs) {
  for (const auto& [name, value] : attrs) {
    if (std::find(accepted.begin(), accepted.end(), name) == accepted.end()) {
      throw ValueError("get_bprop(\"" + op_ + "\"): unknown attribute '" + name +
                       "'; accepted: " + join(accepted));
    }
  }
}

const AttrValue* AttrReader::find(std::string_view name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

bool AttrReader::has(std::string_view name) const { return find(name) != nullptr; }

void AttrReader::missing(std::string_view name) const {
  throw ValueError("get_bprop(\"" + op_ + "\"): attribute '" + std::string(name) + "' is required");
}

void AttrReader::wrong_type(std::string_view name, std::string_view expected) const {
  throw ValueError("get_bprop(\"" + op_ + "\"): attribute '" + std::string(name) + "' must be " +
                   std::string(expected));
}

int64_t AttrReader::get_int(std::string_view name, std::optional<int64_t> def) const {
  const AttrValue* v = find(name);
  if (!v) {
    if (!def) missing(name);
    return *def;
  }
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  wrong_type(name, "an integer");
}

double AttrReader::get_double(std::string_view name, std::optional<double> def) const {
  const AttrValue* v = find(name);
  if (!v) {
    if (!def) missing(name);
    return *def;
  }
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  wrong_type(name, "a number");
}

bool AttrReader::get_bool(std::string_view name, std::optional<bool> def) const {
  const AttrValue* v = find(name);
  if (!v) {
    if (!def) missing(name);
    return *def;
  }
  if (const auto* b = std::get_if<bool>(v)) return *b;
  wrong_type(name, "a bool");
}

std::string AttrReader::get_string(std::string_view name, std::optional<std::string> def) const {
  const AttrValue* v = find(name);
  if (!v) {
    if (!def) missing(name);
    return *def;
  }
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  wrong_type(name, "a string");
}

std::vector<int64_t> AttrReader::get_ints(std::string_view name,
                                          std::optional<std::vector<int64_t>> def) const {
  const AttrValue* v = find(name);
  if (!v) {
    if (!def) missing(name);
    return *def;
  }
  if (const auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
  wrong_type(name, "a list of integers");
}

std::vector<std::string> AttrReader::get_strings(
    std::string_view name, std::optional<std::vector<std::string>> def) const {
  const AttrValue* v = find(name);
  if (!v) {
    if (!def) missing(name);
    return *def;
  }
  if (const auto* l = std::get_if<std::vector<std::string>>(v)) return *l;
  wrong_type(name, "a list of strings");
}

std::vector<Shape> AttrReader::get_shapes(std::string_view name,
                                          std::optional<std::vector<Shape>> def) const {
  const AttrValue* v = find(name);
  if (!v) {
    if (!def) missing(name);
    return *def;
  }
  if (const auto* l = std::get_if<std::vector<Shape>>(v)) return *l;
  wrong_type(name, "a list of shapes");
}

ReduceOp AttrReader::reduce_op() const {
  return parse_reduce_op(get_string("op", std::string("sum")), op_);
}

std::string AttrReader::group() const { return get_string("group", std::string(WORLD)); }

int AttrReader::get_rank_like(std::string_view name, std::optional<int64_t> def) const {
  const int64_t v = get_int(name, def);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    wrong_type(name, "an int");
  }
  return static_cast<int>(v);
}

}  // namespace collie::autograd::detail
