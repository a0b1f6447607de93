// Work: one in-flight operation, completed exactly once by its backend.
//
// The api creates a Work per call (keeping the call's tensors alive while the
// backend uses their memory), the backend completes or fails it from its progress
// engine, and CommHandle::wait() blocks on it. Failures are stored as an
// exception and rethrown by every wait().
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "collie/tensor.h"
#include "runtime/op_info.h"

namespace collie {

class Work {
 public:
  explicit Work(detail::OpInfo info) : info_(std::move(info)) {}

  const detail::OpInfo& info() const { return info_; }

  // Keeps `t`'s storage alive until the work is destroyed.
  void keep_alive(const Tensor& t) { keep_alive_.push_back(t); }

  void complete();
  void fail(std::exception_ptr error);

  void wait();
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  bool is_completed() const;
  std::exception_ptr error() const;

 private:
  detail::OpInfo info_;
  std::vector<Tensor> keep_alive_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace collie
