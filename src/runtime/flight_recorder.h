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

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/op_info.h"

namespace collie::detail {

// issued() and a successful finished() take no lock: each is a few atomic stores
// on the entry (a seqlock lets dump() see whole entries only), so recording costs
// a small collective a few dozen instructions rather than two mutex round trips.
// Failures (rare) and dumps take the mutex for the error texts.
class FlightRecorder {
 public:
  FlightRecorder(std::string group, int world_rank, size_t capacity);

  // Called by one thread at a time per group (the group's submit lock).
  void issued(const OpInfo& info);
  // Any thread. A finish for an entry a newer operation already took changes nothing.
  void finished(uint64_t seq, std::string_view error);  // error empty on success

  // The group's name, as given to the constructor.
  const std::string& group() const { return group_; }

  // A human-readable table of the recorded operations, oldest first.
  std::string dump() const;
  // Prints dump() to stderr, or writes it to $COLLIE_TRACE_DIR/collie-trace-<rank>-<group>.txt.
  void report() const;
  // report(), only the first time it is called (a failed group fails many ops).
  void report_once();

 private:
  enum State : uint64_t { kIssued = 0, kCompleted = 1, kFailed = 2 };
  // An entry's `stamp` is seq << 2 | state; kWriting while issued() rewrites it.
  static constexpr uint64_t kWriting = ~uint64_t{0};
  struct Entry {
    std::atomic<uint64_t> stamp{kWriting};  // kWriting also marks a never-used entry
    // OpInfo::pack_identity() | blocking << 24
    std::atomic<uint64_t> what{0};
    std::atomic<uint64_t> count{0};
    std::atomic<int64_t> tag{0};
    std::atomic<int64_t> start{0}, end{0};  // coarse-clock ticks
    // The seq of the operation that completed here: the entry's own when it
    // did (its stamp still says kIssued). A plain store, not a change of the
    // stamp by compare-exchange: finished() runs right after a call published
    // its data, and a locked instruction there waits for that store to reach
    // the peers (docs/performance_history.md, "Locked instructions after a
    // step is published"). Should the entry be reissued and its new operation
    // complete between an old finish's look at the stamp and its stores (which
    // takes `capacity` newer operations within those few instructions), the
    // new one shows as issued.
    std::atomic<uint64_t> completed_seq{0};
    std::string error;  // under mu_; meaningful when kFailed
  };
  struct Snapshot;  // a consistent copy of one entry (dump)
  bool snapshot(uint64_t seq, Snapshot* out) const;

  std::string group_;
  int world_rank_;
  mutable std::mutex mu_;          // error texts and reported_
  size_t capacity_;                // operations kept (and shown)
  uint64_t mask_;                  // the ring's size (a power of two >= capacity_) - 1
  std::unique_ptr<Entry[]> ring_;  // slot seq & mask_
  std::atomic<uint64_t> recorded_{0};    // operations ever recorded
  std::atomic<uint64_t> newest_seq_{0};  // the largest seq recorded
  bool reported_ = false;
};

// Entries per group: COLLIE_TRACE_ENTRIES, default 64.
size_t flight_recorder_capacity();

}  // namespace collie::detail
