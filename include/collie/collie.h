// collie/collie.h — everything: tensors, runtime and groups, operations, handles.
//
// Example (run with `collie run -n 4 ./prog`):
//   #include <collie/collie.h>
//   int main() {
//     collie::init();
//     auto x = collie::Tensor::ones({2, 8}, collie::DType::Float32);
//     auto [y, h] = collie::all_reduce(x);   // every element 4
//     std::cout << y << "\n";
//     collie::release();
//   }
#pragma once

#include "collie/autograd.h"
#include "collie/comm.h"
#include "collie/comm_ext.h"
#include "collie/dtype.h"
#include "collie/errors.h"
#include "collie/handle.h"
#include "collie/runtime.h"
#include "collie/shared.h"
#include "collie/tensor.h"
