// How fault_rank (one rank of a fault scenario, started by `collie run`) reports
// to fault_test (the gtest driver) through files in $COLLIE_FAULT_DIR:
//
//   pid.<r>      the rank's pid, written first thing
//   ready.<r>    written right before the rank enters the operation under test
//   result.<r>   "key value" lines, written when the operation returned or threw:
//                  class    ok | CommError | TimeoutError | <other exception type>
//                  enter    steady-clock ns when it entered the operation
//                  end      steady-clock ns when it returned or threw
//                  message  what() of the exception (one line)
//   go           created by the test to release a rank that waits for it
//
// Times are std::chrono::steady_clock (CLOCK_MONOTONIC), which is the same clock
// in every process of the machine, so the test can compare a rank's times with
// the moment it sent a signal. Files are written to a temporary name and
// renamed, so a reader never sees half a file.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace collie::faults {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline std::string rank_file(const std::string& dir, const char* what, int rank) {
  return dir + "/" + what + "." + std::to_string(rank);
}

inline bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

struct Result {
  std::string cls;      // "" when the rank wrote no result
  int64_t enter = 0;
  int64_t end = 0;
  std::string message;

  double seconds() const { return static_cast<double>(end - enter) * 1e-9; }
};

inline std::string format_result(const Result& r) {
  std::string msg = r.message;
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  std::ostringstream s;
  s << "class " << r.cls << "\nenter " << r.enter << "\nend " << r.end << "\nmessage " << msg
    << "\n";
  return s.str();
}

inline Result parse_result(const std::string& text) {
  Result r;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "class") r.cls = value;
    else if (key == "enter") r.enter = std::stoll(value);
    else if (key == "end") r.end = std::stoll(value);
    else if (key == "message") r.message = value;
  }
  return r;
}

}  // namespace collie::faults
