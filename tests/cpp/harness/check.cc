#include "check.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace collie::testing {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(mangled);
}

std::string type_name_of(const std::exception& e) { return demangle(typeid(e).name()); }

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

bool contains_ignore_case(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                        [](char a, char b) {
                          return std::tolower(static_cast<unsigned char>(a)) ==
                                 std::tolower(static_cast<unsigned char>(b));
                        });
  return it != haystack.end() || needle.empty();
}

void SoftChecks::check(std::string_view label, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    std::string head = label.empty() ? std::string() : std::string(label) + ": ";
    if (dynamic_cast<const CheckFailure*>(&e) == nullptr) head += type_name_of(e) + ": ";
    failures_.push_back(head + e.what());
  }
}

void SoftChecks::finish() const {
  if (failures_.empty()) return;
  std::string all = std::to_string(failures_.size()) + " failed check(s):";
  for (const auto& f : failures_) all += "\n    " + f;
  throw CheckFailure(all);
}

namespace detail {

Failer::Failer(const char* file, int line, std::string what)
    : head_(std::string(file) + ":" + std::to_string(line) + ": " + std::move(what)) {}

Failer::~Failer() noexcept(false) {
  std::string context = context_.str();
  throw CheckFailure(context.empty() ? head_ : head_ + " [" + context + "]");
}

std::optional<std::string> check_message(const std::string& message,
                                         std::initializer_list<std::string_view> substrings,
                                         const std::string& prefix) {
  for (std::string_view s : substrings) {
    if (!contains(message, s)) {
      return prefix + " with a message containing \"" + std::string(s) + "\", but the message was: " +
             message;
    }
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace collie::testing
