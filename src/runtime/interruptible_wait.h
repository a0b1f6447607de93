// InterruptibleWaits: lets a thread abandon its blocking waits (Python's Ctrl-C).
//
// A language binding whose users expect to interrupt a wait for a peer that is
// not coming installs a check on its thread for the length of a call:
//
//   bool signal_pending();  // e.g. takes the GIL and runs PyErr_CheckSignals()
//   {
//     collie::detail::InterruptibleWaits scope(&signal_pending);
//     auto [y, h] = collie::all_reduce(x);  // throws WaitInterrupted if the check fires
//   }
//
// A blocking wait inside the scope (Work::wait) calls the check after every
// kCheckInterval of waiting and throws WaitInterrupted when it returns true. The
// operation is abandoned, not cancelled: its peers may be inside it, so it goes
// on in the background and completes or fails on its own. Operations started in
// the scope therefore have their Works keep their tensors (Group::submit), as
// asynchronous ones do, so that an abandoned one never touches freed memory.
// The calls stay blocking, driven by their caller: a binding's synchronous call
// costs what the C++ one does, where starting it asynchronously and waiting in
// slices handed it to the progress thread and back.
#pragma once

#include <chrono>
#include <exception>

namespace collie::detail {

class InterruptibleWaits {
 public:
  using Check = bool (*)();
  static constexpr std::chrono::milliseconds kCheckInterval{50};

  explicit InterruptibleWaits(Check check) : previous_(current_) { current_ = check; }
  ~InterruptibleWaits() { current_ = previous_; }
  InterruptibleWaits(const InterruptibleWaits&) = delete;
  InterruptibleWaits& operator=(const InterruptibleWaits&) = delete;

  // The innermost scope's check on this thread, or nullptr outside any.
  static Check current() { return current_; }

 private:
  Check previous_;
  static constinit inline thread_local Check current_ = nullptr;
};

// Thrown by a blocking wait whose InterruptibleWaits check returned true.
class WaitInterrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "a blocking wait was interrupted"; }
};

}  // namespace collie::detail
