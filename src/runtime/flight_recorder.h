// FlightRecorder: the last operations of one group, for post-mortems.
//
// Every operation is recorded when issued (at the choke point) and when it
// completes or fails. When an operation fails with CommError or TimeoutError the
// group's record is printed to stderr (or written to $COLLIE_TRACE_DIR), and
// SIGUSR1 prints every group's record — so a stuck or failed job shows what each
// rank last did, with sequence numbers to line ranks up. Times are read from the
// coarse clock (the kernel tick, 1-4 ms): precise readings cost a tenth of a
// small collective, and the record exists for stalls that last seconds.
//
// Example of a dump:
//   collie flight recorder: rank 1, group 'collie_world_group', last 3 of 3 operations
//     seq 1  all_reduce(sum) float32 x4          completed  0.000 ms
//     seq 2  barrier                             completed  4.000 ms
//     seq 3  all_reduce(sum) float32 x1024       FAILED     2001 ms: ... timed out ...
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/op_info.h"

namespace collie::detail {

class FlightRecorder {
 public:
  FlightRecorder(std::string group, int world_rank, size_t capacity);

  void issued(const OpInfo& info);
  void finished(uint64_t seq, const std::string& error);  // error empty on success

  // A human-readable table of the recorded operations, oldest first.
  std::string dump() const;
  // Prints dump() to stderr, or writes it to $COLLIE_TRACE_DIR/collie-trace-<rank>-<group>.txt.
  void report() const;
  // report(), only the first time it is called (a failed group fails many ops).
  void report_once();

 private:
  enum class State { Issued, Completed, Failed };
  struct Entry {
    OpInfo info;
    State state = State::Issued;
    std::chrono::steady_clock::time_point start, end;
    std::string error;
  };

  std::string group_;
  int world_rank_;
  mutable std::mutex mu_;
  std::vector<Entry> ring_;  // capacity entries, slot seq % capacity
  uint64_t recorded_ = 0;    // operations ever recorded
  bool reported_ = false;
};

// Entries per group: COLLIE_TRACE_ENTRIES, default 64.
size_t flight_recorder_capacity();

}  // namespace collie::detail
