#include "runtime/flight_recorder.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "runtime/coarse_clock.h"

namespace collie::detail {
namespace {

const char* state_name(int s) {
  switch (s) {
    case 0:
      return "issued";
    case 1:
      return "completed";
    default:
      return "FAILED";
  }
}

std::string safe_file_part(const std::string& s) {
  std::string out;
  for (char c : s)
    out.push_back((isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_');
  return out;
}

}  // namespace

size_t flight_recorder_capacity() {
  const char* v = std::getenv("COLLIE_TRACE_ENTRIES");
  if (v == nullptr || *v == '\0') return 64;
  long n = std::strtol(v, nullptr, 10);
  return n > 0 ? static_cast<size_t>(n) : 64;
}

FlightRecorder::FlightRecorder(std::string group, int world_rank, size_t capacity)
    : group_(std::move(group)),
      world_rank_(world_rank),
      capacity_(capacity == 0 ? 1 : capacity),
      // A power of two of entries, so a sequence number finds its slot with a
      // mask: a 64-bit division (seq % capacity) took tens of cycles twice per
      // call. The last capacity_ operations still have distinct slots.
      mask_(std::bit_ceil(capacity_) - 1),
      ring_(new Entry[mask_ + 1]) {}

namespace {
using Clock = std::chrono::steady_clock;
int64_t ticks(Clock::time_point t) { return t.time_since_epoch().count(); }
Clock::time_point from_ticks(int64_t n) { return Clock::time_point(Clock::duration(n)); }
}  // namespace

void FlightRecorder::issued(const OpInfo& info) {
  Entry& e = ring_[info.seq & mask_];
  // Seqlock write: readers that see kWriting, or a different stamp after reading
  // the fields, discard what they read. The fields are release stores (and the
  // reader's loads acquire), so a reader that sees any new field value also sees
  // kWriting or the new stamp when it reads the stamp again (no fences: those
  // are invisible to ThreadSanitizer).
  e.stamp.store(kWriting, std::memory_order_relaxed);
  e.what.store(info.pack_identity() | static_cast<uint64_t>(info.blocking) << 24,
               std::memory_order_release);
  e.count.store(info.count, std::memory_order_release);
  e.tag.store(info.tag, std::memory_order_release);
  e.start.store(ticks(coarse_now()), std::memory_order_release);
  e.stamp.store(info.seq << 2 | kIssued, std::memory_order_release);
  recorded_.store(recorded_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  newest_seq_.store(info.seq, std::memory_order_relaxed);
}

void FlightRecorder::finished(uint64_t seq, std::string_view error) {
  Entry& e = ring_[seq & mask_];
  uint64_t expected = seq << 2 | kIssued;
  if (e.stamp.load(std::memory_order_relaxed) != expected) return;  // a newer op took the entry
  e.end.store(ticks(coarse_now()), std::memory_order_release);
  if (error.empty()) {
    e.completed_seq.store(seq, std::memory_order_release);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (e.stamp.load(std::memory_order_relaxed) != expected) return;  // overwritten already
  e.error = error;
  e.stamp.compare_exchange_strong(expected, seq << 2 | kFailed, std::memory_order_release,
                                  std::memory_order_relaxed);
}

struct FlightRecorder::Snapshot {
  OpInfo info;
  State state;
  Clock::time_point start, end;
  std::string error;
};

// Caller holds mu_ (for the error text).
bool FlightRecorder::snapshot(uint64_t seq, Snapshot* out) const {
  const Entry& e = ring_[seq & mask_];
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t stamp = e.stamp.load(std::memory_order_acquire);
    if (stamp == kWriting) continue;
    if (stamp >> 2 != seq) return false;  // overwritten by a newer operation
    const uint64_t what = e.what.load(std::memory_order_acquire);
    out->info.unpack_identity(what);
    out->info.blocking = ((what >> 24) & 1) != 0;
    out->info.count = e.count.load(std::memory_order_acquire);
    out->info.tag = static_cast<int>(e.tag.load(std::memory_order_acquire));
    out->info.seq = seq;
    out->start = from_ticks(e.start.load(std::memory_order_acquire));
    out->end = from_ticks(e.end.load(std::memory_order_acquire));
    out->state = static_cast<State>(stamp & 3);
    if (out->state == kIssued && e.completed_seq.load(std::memory_order_acquire) == seq) {
      out->state = kCompleted;
      out->end = from_ticks(e.end.load(std::memory_order_acquire));
    }
    if (e.stamp.load(std::memory_order_relaxed) != stamp) continue;  // changed while read
    out->error = out->state == kFailed ? e.error : std::string();
    return true;
  }
  return false;
}

std::string FlightRecorder::dump() const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t recorded = recorded_.load(std::memory_order_relaxed);
  const uint64_t shown = std::min<uint64_t>(recorded, capacity_);
  std::string out = "collie flight recorder: rank " + std::to_string(world_rank_) + ", group '" +
                    group_ + "', last " + std::to_string(shown) + " of " +
                    std::to_string(recorded) + " operations\n";
  auto now = coarse_now();
  const uint64_t newest = newest_seq_.load(std::memory_order_relaxed);
  for (uint64_t seq = newest + 1 - shown; seq <= newest && shown > 0; ++seq) {
    Snapshot e;
    if (!snapshot(seq, &e)) continue;
    const std::string what = e.info.describe_call();
    auto end = e.state == kIssued ? now : e.end;
    char line[512];
    std::snprintf(line, sizeof(line), "  seq %-6llu %-44s %-10s %10.3f ms%s%s\n",
                  static_cast<unsigned long long>(seq), what.c_str(),
                  state_name(static_cast<int>(e.state)),
                  std::chrono::duration<double, std::milli>(end - e.start).count(),
                  e.state == kIssued ? " (still running)" : "",
                  e.error.empty() ? "" : (": " + e.error.substr(0, 300)).c_str());
    out += line;
  }
  return out;
}

void FlightRecorder::report() const {
  std::string text = dump();
  if (const char* dir = std::getenv("COLLIE_TRACE_DIR"); dir != nullptr && *dir != '\0') {
    std::string path = std::string(dir) + "/collie-trace-" + std::to_string(world_rank_) + "-" +
                       safe_file_part(group_) + ".txt";
    std::ofstream f(path, std::ios::app);
    if (f) {
      f << text;
      return;
    }
  }
  std::fputs(text.c_str(), stderr);
}

}  // namespace collie::detail

namespace collie::detail {

void FlightRecorder::report_once() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reported_) return;
    reported_ = true;
  }
  report();
}

}  // namespace collie::detail
