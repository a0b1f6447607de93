#include "runtime/flight_recorder.h"

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
    : group_(std::move(group)), world_rank_(world_rank), ring_(capacity == 0 ? 1 : capacity) {}

void FlightRecorder::issued(const OpInfo& info) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = ring_[info.seq % ring_.size()];
  // Every entry is of this recorder's group: copying the group's shared name would
  // only cost two atomic reference-count updates per operation.
  e.info.kind = info.kind;
  e.info.seq = info.seq;
  e.info.count = info.count;
  e.info.dtype = info.dtype;
  e.info.reduce_op = info.reduce_op;
  e.info.root = info.root;
  e.info.tag = info.tag;
  e.info.blocking = info.blocking;
  e.state = State::Issued;
  e.start = coarse_now();
  e.error.clear();
  ++recorded_;
}

void FlightRecorder::finished(uint64_t seq, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = ring_[seq % ring_.size()];
  if (e.info.seq != seq) return;  // overwritten by a newer operation already
  e.state = error.empty() ? State::Completed : State::Failed;
  e.end = coarse_now();
  e.error = error;
}

std::string FlightRecorder::dump() const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t shown = std::min<uint64_t>(recorded_, ring_.size());
  std::string out = "collie flight recorder: rank " + std::to_string(world_rank_) + ", group '" +
                    group_ + "', last " + std::to_string(shown) + " of " +
                    std::to_string(recorded_) + " operations\n";
  auto now = coarse_now();
  // Entries sit at seq % capacity; the newest seq is the largest recorded.
  uint64_t newest = 0;
  for (const Entry& e : ring_) newest = std::max(newest, e.info.seq);
  for (uint64_t seq = newest + 1 - shown; seq <= newest && shown > 0; ++seq) {
    const Entry& e = ring_[seq % ring_.size()];
    if (e.info.seq != seq) continue;
    std::string what = e.info.describe();
    what = what.substr(0, what.find(" on group"));
    auto end = e.state == State::Issued ? now : e.end;
    char line[512];
    std::snprintf(line, sizeof(line), "  seq %-6llu %-44s %-10s %10.3f ms%s%s\n",
                  static_cast<unsigned long long>(seq), what.c_str(),
                  state_name(static_cast<int>(e.state)),
                  std::chrono::duration<double, std::milli>(end - e.start).count(),
                  e.state == State::Issued ? " (still running)" : "",
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
