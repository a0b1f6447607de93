// collie/errors.h — the exceptions collie throws, one class per kind of failure.
//
// Every error collie reports derives from collie::Error. The classes mirror the
// Python exceptions MindSpore raises under the same conditions, so the Python
// binding maps each class to one Python exception type:
//
//   collie::TypeError     -> TypeError     wrong kind of argument (bad reduce op, ...)
//   collie::ValueError    -> ValueError    right kind, bad value (sizes, ranks, groups)
//   collie::KeyError      -> KeyError      a rank or group looked up and not found
//   collie::RuntimeError  -> RuntimeError  wrong state (not initialised, group failed)
//   collie::CommError     -> RuntimeError  a peer died, a mismatched call, an IO error
//   collie::TimeoutError  -> TimeoutError  a deadline passed while peers were missing
//
// Example:
//   try {
//     auto [y, h] = collie::all_reduce(x);
//   } catch (const collie::TimeoutError& e) {
//     std::cerr << e.what();   // names op, group, sequence number and missing ranks
//   }
#pragma once

#include <stdexcept>
#include <string>

namespace collie {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TypeError : public Error {
 public:
  using Error::Error;
};

class ValueError : public Error {
 public:
  using Error::Error;
};

class KeyError : public Error {
 public:
  using Error::Error;
};

class RuntimeError : public Error {
 public:
  using Error::Error;
};

// A communication failure: a peer process died, called a different operation,
// or a system call failed. The message names op, group, sequence number and ranks.
class CommError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// A wait passed its deadline while the peers it needed were alive but absent.
class TimeoutError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

}  // namespace collie
