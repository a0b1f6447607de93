// p2p_op.cc — the P2POp docstring example: describing point-to-point operations for
// batch_isend_irecv. Nothing is sent; the ops are only constructed. (MindSpore also
// accepts the functions isend/irecv as `op`; in C++ the op is named by its string.)
// An irecv is described either by a template tensor or by a shape and a dtype.
//
// Run:  collie run -n 1 build/examples/p2p_op      (or just build/examples/p2p_op)
// Prints:
//   send_op: isend peer=1 shape=[] dtype=float32
//   recv_op: irecv peer=0 shape=[] dtype=float32
//   recv_op (by shape): irecv peer=0 shape=[] dtype=float32
#include <iostream>

#include "example_util.h"

namespace {

std::string describe(const collie::P2POp& op) {
  const bool is_send = op.kind == collie::P2POp::Kind::ISEND;
  const collie::Shape& shape = is_send ? op.tensor.shape() : op.recv_shape;
  const collie::DType dtype = is_send ? op.tensor.dtype() : op.recv_dtype;
  return std::string(is_send ? "isend" : "irecv") + " peer=" + std::to_string(op.peer) +
         " shape=" + collie::shape_to_string(shape) + " dtype=" + std::string(collie::dtype_name(dtype));
}

}  // namespace

int main() {
  try {
    auto send_tensor = collie::Tensor::scalar(1.0);
    collie::P2POp send_op("isend", send_tensor, 1);
    auto recv_tensor = collie::Tensor::scalar(0.0);
    collie::P2POp recv_op("irecv", recv_tensor, 0);
    collie::P2POp recv_by_shape("irecv", collie::Shape{}, 0, collie::WORLD, 0, collie::DType::Float32);
    std::cout << "send_op: " << describe(send_op) << "\n";
    std::cout << "recv_op: " << describe(recv_op) << "\n";
    std::cout << "recv_op (by shape): " << describe(recv_by_shape) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
