// Variable: a tensor with an optional accumulated gradient (collie/autograd.h).
#include <atomic>

#include "autograd/tape_internal.h"
#include "autograd/tensor_math.h"
#include "collie/errors.h"

namespace collie::autograd {

namespace detail {
uint64_t next_var_id() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}
}  // namespace detail

Variable::Variable(Tensor value, bool requires_grad) : impl_(std::make_shared<detail::VarImpl>()) {
  impl_->id = detail::next_var_id();
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
  if (requires_grad) detail::require_floating(impl_->value, "a Variable that requires grad");
}

namespace {
const detail::VarImpl& checked(const std::shared_ptr<detail::VarImpl>& impl) {
  if (!impl) throw RuntimeError("autograd: use of an undefined (default-constructed) Variable");
  return *impl;
}
}  // namespace

const Tensor& Variable::value() const { return checked(impl_).value; }
bool Variable::requires_grad() const { return checked(impl_).requires_grad; }
bool Variable::has_grad() const { return checked(impl_).grad.has_value(); }

Tensor Variable::grad() const {
  const auto& impl = checked(impl_);
  return impl.grad ? *impl.grad : detail::zeros_like(impl.value);
}

void Variable::zero_grad() {
  checked(impl_);
  impl_->grad.reset();
}

void Variable::set_value(const Tensor& value) {
  const auto& impl = checked(impl_);
  if (!impl.is_leaf) throw RuntimeError("Variable::set_value: only a leaf's value can be replaced");
  if (value.shape() != impl.value.shape() || value.dtype() != impl.value.dtype()) {
    throw ValueError("Variable::set_value: expected shape " + shape_to_string(impl.value.shape()) +
                     " " + std::string(dtype_name(impl.value.dtype())) + ", got " +
                     shape_to_string(value.shape()) + " " + std::string(dtype_name(value.dtype())));
  }
  // A new tensor, not a write into the old one: ops recorded earlier saved the old value.
  impl_->value = value.clone();
}

}  // namespace collie::autograd
