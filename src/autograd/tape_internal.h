// The tape's data structures, shared by the tape, the variables and the ops.
//
// A Tape is a Wengert list: ops append Nodes in execution order, and backward walks the
// list in reverse. Walking the whole list (not a graph search from the loss) is what makes
// backward safe for collectives: a rank whose loss does not depend on a collective's
// output still reaches that collective's node and runs its rule, as the other ranks do.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collie/autograd.h"

namespace collie::autograd::detail {

struct VarImpl {
  uint64_t id = 0;  // unique per process: cotangents are keyed by it, never by address
  Tensor value;
  bool requires_grad = false;
  bool is_leaf = true;         // made by the user, or by an op that was not recorded
  std::optional<Tensor> grad;  // accumulated by backward (leaves only)
};

// Cotangents of an op's outputs -> cotangents of its inputs (one per input, in order).
using Vjp = std::function<TensorList(const TensorList& douts)>;

struct Node {
  std::string name;
  bool collective = false;  // runs in backward even when no cotangent reached it
  std::vector<std::shared_ptr<VarImpl>> inputs;
  std::vector<uint64_t> output_ids;
  std::vector<Shape> output_shapes;
  std::vector<DType> output_dtypes;
  Vjp vjp;
};

class TapeImpl {
 public:
  void run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& seeds);
  std::vector<Node> nodes;
  bool used = false;
};

// The innermost live Tape of this thread, or nullptr.
TapeImpl* active_tape();
void push_tape(TapeImpl* tape);
void pop_tape(TapeImpl* tape);

uint64_t next_var_id();

// Wraps an op's output tensors in Variables and, when a tape is active and the op needs
// it (a collective, or an input that requires grad), records the op. `vjp` receives one
// cotangent per output and returns one per input.
std::vector<Variable> record(std::string name, bool collective, const std::vector<Variable>& inputs,
                             const TensorList& outputs, Vjp vjp);
Variable record1(std::string name, bool collective, const std::vector<Variable>& inputs,
                 const Tensor& output, Vjp vjp);

}  // namespace collie::autograd::detail
