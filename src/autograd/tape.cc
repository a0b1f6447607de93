// Tape: recording ops and running them backwards (collie/autograd.h).
#include <algorithm>
#include <unordered_map>

#include "autograd/tape_internal.h"
#include "autograd/tensor_math.h"
#include "collie/errors.h"

namespace collie::autograd {
namespace detail {
namespace {

thread_local std::vector<TapeImpl*> tape_stack;

void check_cotangent(const VarImpl& v, const Tensor& g, const std::string& where) {
  if (g.shape() != v.value.shape()) {
    throw ValueError("autograd: " + where + " gives a cotangent of shape " +
                     shape_to_string(g.shape()) + " for a value of shape " +
                     shape_to_string(v.value.shape()));
  }
}

}  // namespace

TapeImpl* active_tape() { return tape_stack.empty() ? nullptr : tape_stack.back(); }

void push_tape(TapeImpl* tape) { tape_stack.push_back(tape); }

void pop_tape(TapeImpl* tape) {
  auto it = std::find(tape_stack.begin(), tape_stack.end(), tape);
  if (it != tape_stack.end()) tape_stack.erase(it);
}

std::vector<Variable> record(std::string name, bool collective, const std::vector<Variable>& inputs,
                             const TensorList& outputs, Vjp vjp) {
  TapeImpl* tape = active_tape();
  bool needed = tape != nullptr && collective;
  for (const Variable& v : inputs) needed = needed || (tape != nullptr && v.requires_grad());
  std::vector<Variable> result;
  Node node;
  for (const Tensor& t : outputs) {
    auto impl = std::make_shared<VarImpl>();
    impl->id = next_var_id();
    impl->value = t;
    impl->requires_grad = needed;
    impl->is_leaf = !needed;
    node.output_ids.push_back(impl->id);
    node.output_shapes.push_back(t.shape());
    node.output_dtypes.push_back(t.dtype());
    result.emplace_back(impl);
  }
  if (needed) {
    node.name = std::move(name);
    node.collective = collective;
    for (const Variable& v : inputs) node.inputs.push_back(v.impl());
    node.vjp = std::move(vjp);
    tape->nodes.push_back(std::move(node));
  }
  return result;
}

Variable record1(std::string name, bool collective, const std::vector<Variable>& inputs,
                 const Tensor& output, Vjp vjp) {
  return record(std::move(name), collective, inputs, {output}, std::move(vjp))[0];
}

void TapeImpl::run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& seeds) {
  if (used) {
    throw RuntimeError(
        "Tape::backward: this tape has already run backward; record the ops again "
        "under a new Tape");
  }
  used = true;
  if (!seeds.empty() && seeds.size() != roots.size()) {
    throw ValueError("Tape::backward: " + std::to_string(seeds.size()) + " seeds for " +
                     std::to_string(roots.size()) + " roots");
  }
  std::unordered_map<uint64_t, Tensor> cot;
  std::unordered_map<uint64_t, std::shared_ptr<VarImpl>> leaves;
  auto accumulate = [&](const std::shared_ptr<VarImpl>& v, const Tensor& g,
                        const std::string& where) {
    check_cotangent(*v, g, where);
    auto it = cot.find(v->id);
    if (it == cot.end()) {
      cot.emplace(v->id, g);
    } else {
      it->second = add(it->second, g);
    }
    if (v->is_leaf && v->requires_grad) leaves.emplace(v->id, v);
  };

  for (size_t i = 0; i < roots.size(); ++i) {
    const auto& root = roots[i].impl();
    if (!root) throw RuntimeError("Tape::backward: an undefined Variable as root");
    if (!root->requires_grad) continue;  // a constant: nothing flows from it
    Tensor seed = seeds.empty() ? Tensor::ones(root->value.shape(), root->value.dtype()) : seeds[i];
    accumulate(root, seed, "the seed of root " + std::to_string(i));
  }

  // Reverse recording order: identical on every rank that ran the same program, so the
  // rules' collectives pair up across ranks.
  for (auto node = nodes.rbegin(); node != nodes.rend(); ++node) {
    const size_t n_out = node->output_ids.size();
    TensorList douts(n_out);
    std::vector<bool> arrived(n_out, false);
    for (size_t k = 0; k < n_out; ++k) {
      auto it = cot.find(node->output_ids[k]);
      if (it == cot.end()) continue;
      douts[k] = it->second;
      arrived[k] = true;
      cot.erase(it);  // an output's cotangent is complete once its producer runs
    }
    const bool reached = std::find(arrived.begin(), arrived.end(), true) != arrived.end();
    if (!reached && !node->collective) continue;
    for (size_t k = 0; k < n_out; ++k) {
      if (!arrived[k]) douts[k] = Tensor::zeros(node->output_shapes[k], node->output_dtypes[k]);
    }
    TensorList dxs = node->vjp(douts);
    if (dxs.size() != node->inputs.size()) {
      throw RuntimeError("autograd: the backward of " + node->name + " returned " +
                         std::to_string(dxs.size()) + " cotangents for " +
                         std::to_string(node->inputs.size()) + " inputs (a bug)");
    }
    for (size_t i = 0; i < dxs.size(); ++i) {
      if (node->inputs[i]->requires_grad)
        accumulate(node->inputs[i], dxs[i], "the backward of " + node->name);
    }
  }

  for (auto& [id, leaf] : leaves) {
    const Tensor& g = cot.at(id);
    leaf->grad = leaf->grad ? add(*leaf->grad, g) : g.contiguous().clone();
  }
  nodes.clear();
}

}  // namespace detail

Tape::Tape() : impl_(std::make_unique<detail::TapeImpl>()) { detail::push_tape(impl_.get()); }

Tape::~Tape() { detail::pop_tape(impl_.get()); }

void Tape::backward(const Variable& loss) { impl_->run_backward({loss}, {}); }

void Tape::backward(const std::vector<Variable>& roots, const std::vector<Tensor>& seeds) {
  impl_->run_backward(roots, seeds);
}

void Tape::backward() { impl_->run_backward({}, {}); }

size_t Tape::size() const { return impl_->nodes.size(); }

}  // namespace collie::autograd
