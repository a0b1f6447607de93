// SIGUSR1 -> print every group's flight recorder (see flight_recorder.h).
//
// The signal handler only writes a byte to a pipe (async-signal-safe); a small
// thread reads it and prints. Installed by init() only if SIGUSR1 still has its
// default disposition, so a program's own handler is never replaced.
#pragma once

#include <functional>
#include <thread>

namespace collie::detail {

class SignalDump {
 public:
  explicit SignalDump(std::function<void()> dump);
  ~SignalDump();  // restores the default disposition, stops the thread
  SignalDump(const SignalDump&) = delete;
  SignalDump& operator=(const SignalDump&) = delete;

 private:
  std::function<void()> dump_;
  int pipe_[2] = {-1, -1};
  bool installed_ = false;
  std::thread thread_;
};

}  // namespace collie::detail
