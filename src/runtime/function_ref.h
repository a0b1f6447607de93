// FunctionRef: a non-owning reference to a callable, for callbacks that are
// called before the function taking them returns (like absl::FunctionRef).
//
// The choke point takes the backend launch of every operation as a callback; a
// std::function there heap-allocated the lambda's captures on every call.
//
//   void run(FunctionRef<int(int)> f) { f(1); }
//   run([&](int x) { return x + offset; });
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace collie::detail {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<
                            !std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
                            std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a lambda
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace collie::detail
