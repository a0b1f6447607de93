// collie/testing check.h — assertions for code running inside a forked rank.
//
// gtest's EXPECT_*/ASSERT_* record failures in the process that runs them, so inside a
// child of run_ranks they would be lost. These macros throw collie::testing::CheckFailure
// (message: "file:line: what failed, with both values"), which run_ranks turns into
// "rank R: ..." and a failed test. Extra context can be streamed into any of them:
//
//   RCHECK_EQ(y.shape(), (collie::Shape{4, 8})) << "dtype " << dtype_name(dt);
//   RCHECK_THROWS(collie::reduce_scatter_tensor(x), collie::ValueError,
//                 "reduce_scatter_tensor");      // exact class; message must contain these
//   RCHECK_THROWS_DERIVED(f(), collie::RuntimeError, "init()");  // class or a subclass
#pragma once

#include <exception>
#include <functional>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::testing {

class CheckFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Demangled name of a type / of an exception's dynamic type ("collie::ValueError").
std::string demangle(const char* mangled);
std::string type_name_of(const std::exception& e);

bool contains(std::string_view haystack, std::string_view needle);
bool contains_ignore_case(std::string_view haystack, std::string_view needle);

// Text for a value in a failure message.
template <typename T>
std::string printable(const T& value);

namespace detail {

template <typename T, typename = void>
struct IsStreamable : std::false_type {};
template <typename T>
struct IsStreamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <typename T>
struct IsVector : std::false_type {};
template <typename T, typename A>
struct IsVector<std::vector<T, A>> : std::true_type {};

// Collects streamed context and throws CheckFailure when destroyed.
class Failer {
 public:
  Failer(const char* file, int line, std::string what);
  Failer(const Failer&) = delete;
  Failer& operator=(const Failer&) = delete;
  ~Failer() noexcept(false);
  template <typename T>
  Failer& operator<<(const T& v) {
    if constexpr (std::is_convertible_v<const T&, std::string_view>) {
      context_ << std::string_view(v);  // context text is not quoted
    } else {
      context_ << printable(v);
    }
    return *this;
  }

 private:
  std::string head_;
  std::ostringstream context_;
};

template <typename A, typename B>
std::optional<std::string> compare(const A& a, const B& b, bool ok, const char* op,
                                   const char* a_text, const char* b_text) {
  if (ok) return std::nullopt;
  return std::string("RCHECK(") + a_text + " " + op + " " + b_text + ") failed: " + printable(a) +
         " vs " + printable(b);
}

std::optional<std::string> check_message(const std::string& message,
                                         std::initializer_list<std::string_view> substrings,
                                         const std::string& prefix);

template <typename Exc>
std::optional<std::string> check_throws(const std::function<void()>& fn, const char* stmt_text,
                                        const char* exc_text, bool exact,
                                        std::initializer_list<std::string_view> substrings) {
  const std::string prefix = std::string(stmt_text) + " was expected to throw " + exc_text;
  try {
    fn();
  } catch (const Exc& e) {
    if (exact && typeid(e) != typeid(Exc)) {
      return prefix + " exactly, but threw " + type_name_of(e) + ": " + e.what();
    }
    return check_message(e.what(), substrings, prefix + " (" + type_name_of(e) + ")");
  } catch (const std::exception& e) {
    return prefix + ", but threw " + type_name_of(e) + ": " + e.what();
  } catch (...) {
    return prefix + ", but threw something that is not a std::exception";
  }
  return prefix + ", but it returned normally";
}

}  // namespace detail

// Runs independent checks and collects their failures instead of stopping at the
// first, so one run reports every failing case of a loop; finish() throws them all.
// Only for cases that fail the same way on every rank (argument errors, wrong values):
// a collective that throws on some ranks only would desynchronise the ranks.
//
//   SoftChecks soft;
//   for (DType dt : all_dtypes()) soft.check(dtype_name(dt), [&] { ... RCHECK(...) ... });
//   soft.finish();
class SoftChecks {
 public:
  // Runs fn; a CheckFailure or collie error it throws is recorded under `label`.
  void check(std::string_view label, const std::function<void()>& fn);
  // Throws one CheckFailure listing every recorded failure (if any).
  void finish() const;
  size_t failures() const { return failures_.size(); }

 private:
  std::vector<std::string> failures_;
};

template <typename T>
std::string printable(const T& value) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, DType>) {
    os << dtype_name(value);
  } else if constexpr (std::is_same_v<T, ReduceOp>) {
    os << reduce_op_name(value);
  } else if constexpr (std::is_same_v<T, bool>) {
    os << (value ? "true" : "false");
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    os << '"' << std::string_view(value) << '"';
  } else if constexpr (std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char>) {
    os << static_cast<int>(value);
  } else if constexpr (detail::IsVector<T>::value) {
    os << '[';
    for (size_t i = 0; i < value.size(); ++i) os << (i ? ", " : "") << printable(value[i]);
    os << ']';
  } else if constexpr (detail::IsStreamable<T>::value) {
    os << value;
  } else {
    os << "<" << demangle(typeid(T).name()) << ">";
  }
  return os.str();
}

}  // namespace collie::testing

// A `for` statement (not if/else) so that the macro is one statement that a caller's
// unbraced if/else cannot bind to; Failer's destructor throws, so the body runs at most once.
#define COLLIE_TESTING_CHECK_(failure_opt)                                          \
  for (std::optional<std::string> collie_check_failure_ = (failure_opt);            \
       collie_check_failure_; collie_check_failure_.reset())                        \
  ::collie::testing::detail::Failer(__FILE__, __LINE__, *collie_check_failure_)

#define RCHECK(cond)                                                                     \
  COLLIE_TESTING_CHECK_((cond) ? std::optional<std::string>()                           \
                               : std::optional<std::string>("RCHECK(" #cond ") failed"))

// Each operand is evaluated once.
#define COLLIE_TESTING_CMP_(a, b, op)                                            \
  COLLIE_TESTING_CHECK_(([&](const auto& collie_lhs_, const auto& collie_rhs_) { \
    return ::collie::testing::detail::compare(collie_lhs_, collie_rhs_,          \
                                              (collie_lhs_ op collie_rhs_), #op, #a, #b); \
  }((a), (b))))

#define RCHECK_EQ(a, b) COLLIE_TESTING_CMP_(a, b, ==)
#define RCHECK_NE(a, b) COLLIE_TESTING_CMP_(a, b, !=)
#define RCHECK_LT(a, b) COLLIE_TESTING_CMP_(a, b, <)
#define RCHECK_LE(a, b) COLLIE_TESTING_CMP_(a, b, <=)
#define RCHECK_GT(a, b) COLLIE_TESTING_CMP_(a, b, >)
#define RCHECK_GE(a, b) COLLIE_TESTING_CMP_(a, b, >=)

// `statement` must throw exactly `exc_type` whose what() contains every given substring.
#define RCHECK_THROWS(statement, exc_type, ...)                                          \
  COLLIE_TESTING_CHECK_(::collie::testing::detail::check_throws<exc_type>(               \
      [&]() { (void)(statement); }, #statement, #exc_type, true, {__VA_ARGS__}))

// Like RCHECK_THROWS, but a subclass of `exc_type` is accepted too.
#define RCHECK_THROWS_DERIVED(statement, exc_type, ...)                                  \
  COLLIE_TESTING_CHECK_(::collie::testing::detail::check_throws<exc_type>(               \
      [&]() { (void)(statement); }, #statement, #exc_type, false, {__VA_ARGS__}))

// RCHECK_THROWS / RCHECK_THROWS_DERIVED recorded in a SoftChecks instead of thrown.
#define SOFT_THROWS(soft, statement, exc_type, ...) \
  (soft).check("", [&]() { RCHECK_THROWS(statement, exc_type, __VA_ARGS__); })
#define SOFT_THROWS_DERIVED(soft, statement, exc_type, ...) \
  (soft).check("", [&]() { RCHECK_THROWS_DERIVED(statement, exc_type, __VA_ARGS__); })
