// The flight recorder: what a dump shows after operations are issued, completed,
// failed and overwritten, and dumps taken while other threads record.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/flight_recorder.h"

namespace collie::detail {
namespace {

OpInfo op(uint64_t seq, OpKind kind = OpKind::AllReduce, uint64_t count = 4) {
  OpInfo info;
  info.kind = kind;
  info.seq = seq;
  info.count = count;
  info.dtype = DType::Float32;
  info.reduce_op = ReduceOp::SUM;
  return info;
}

int lines_matching(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(FlightRecorder, ShowsEachOperationsStateInOrder) {
  FlightRecorder r("g", 3, 8);
  r.issued(op(1));
  r.finished(1, "");
  OpInfo b = op(2, OpKind::Broadcast, 16);
  b.root = 1;
  r.issued(b);
  r.finished(2, "rank 1 died");
  r.issued(op(3, OpKind::Barrier, 0));
  const std::string d = r.dump();
  EXPECT_NE(d.find("rank 3, group 'g', last 3 of 3 operations"), std::string::npos) << d;
  EXPECT_EQ(lines_matching(d, "seq 1 +all_reduce\\(sum\\) float32 x4 +completed"), 1) << d;
  EXPECT_EQ(lines_matching(d, "seq 2 +broadcast.*FAILED .*: rank 1 died"), 1) << d;
  EXPECT_EQ(lines_matching(d, "seq 3 +barrier +issued .*\\(still running\\)"), 1) << d;
  EXPECT_LT(d.find("seq 1 "), d.find("seq 2 "));
  EXPECT_LT(d.find("seq 2 "), d.find("seq 3 "));
}

TEST(FlightRecorder, KeepsTheLastCapacityOperationsAndIgnoresLateFinishes) {
  FlightRecorder r("g", 0, 4);
  for (uint64_t seq = 1; seq <= 10; ++seq) r.issued(op(seq));
  r.finished(3, "");            // entry 3 was taken by seq 7: nothing changes
  r.finished(4, "late error");  // likewise for 8
  r.finished(9, "");
  const std::string d = r.dump();
  EXPECT_NE(d.find("last 4 of 10 operations"), std::string::npos) << d;
  for (int seq = 1; seq <= 6; ++seq) {
    EXPECT_EQ(lines_matching(d, "seq " + std::to_string(seq) + " "), 0) << seq << "\n" << d;
  }
  EXPECT_EQ(lines_matching(d, "seq 7 .*issued"), 1) << d;
  EXPECT_EQ(lines_matching(d, "seq 8 .*issued"), 1) << d;
  EXPECT_EQ(lines_matching(d, "seq 9 .*completed"), 1) << d;
  EXPECT_EQ(lines_matching(d, "late error"), 0) << d;
}

// A completion is recorded as the seq that completed (no compare-exchange on
// the entry's stamp), so an entry reissued after its operation completed shows
// the new operation as issued until that one completes too.
TEST(FlightRecorder, AReissuedEntryShowsItsNewOperationIssuedUntilItCompletes) {
  FlightRecorder r("g", 0, 4);
  for (uint64_t seq = 1; seq <= 4; ++seq) r.issued(op(seq));
  r.finished(1, "");
  r.issued(op(5));  // takes entry 1
  std::string d = r.dump();
  EXPECT_EQ(lines_matching(d, "seq 5 .*issued"), 1) << d;
  EXPECT_EQ(lines_matching(d, "completed"), 0) << d;
  r.finished(5, "");
  d = r.dump();
  EXPECT_EQ(lines_matching(d, "seq 5 .*completed"), 1) << d;
}

// A capacity that is not a power of two: the ring rounds up (slots found with a
// mask) but shows exactly the last `capacity` operations.
TEST(FlightRecorder, AnyCapacityShowsExactlyThatManyOperations) {
  FlightRecorder r("g", 0, 3);
  for (uint64_t seq = 1; seq <= 10; ++seq) r.issued(op(seq));
  r.finished(10, "");
  const std::string d = r.dump();
  EXPECT_NE(d.find("last 3 of 10 operations"), std::string::npos) << d;
  for (int seq = 1; seq <= 7; ++seq) {
    EXPECT_EQ(lines_matching(d, "seq " + std::to_string(seq) + " "), 0) << seq << "\n" << d;
  }
  EXPECT_EQ(lines_matching(d, "seq 8 .*issued"), 1) << d;
  EXPECT_EQ(lines_matching(d, "seq 9 .*issued"), 1) << d;
  EXPECT_EQ(lines_matching(d, "seq 10 .*completed"), 1) << d;
}

TEST(FlightRecorder, AReusedEntryDoesNotShowAnEarlierError) {
  FlightRecorder r("g", 0, 2);
  r.issued(op(1));
  r.finished(1, "boom");
  r.issued(op(2));
  r.issued(op(3));  // takes entry 1's place
  r.finished(3, "");
  const std::string d = r.dump();
  EXPECT_EQ(lines_matching(d, "boom"), 0) << d;
  EXPECT_EQ(lines_matching(d, "seq 3 .*completed"), 1) << d;
}

// Dumps (SIGUSR1, a failure) happen while other threads issue and finish.
TEST(FlightRecorder, DumpsWhileOthersRecordShowWholeEntries) {
  FlightRecorder r("g", 0, 16);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> next{1};
  std::thread issuer([&] {
    while (!stop.load()) {
      const uint64_t seq = next.load();
      r.issued(op(seq, OpKind::AllReduce, /*count=*/seq));
      next.store(seq + 1);
      std::this_thread::yield();  // let dumps find some entries at rest
    }
  });
  std::thread finisher([&] {
    while (!stop.load()) {
      const uint64_t seq = next.load();
      if (seq > 1) r.finished(seq - 1, seq % 3 ? "" : "failed");
    }
  });
  const std::regex line(
      "  seq ([0-9]+) +all_reduce\\(sum\\) float32 x([0-9]+) +"
      "(issued|completed|FAILED) .*");
  int checked = 0;
  while (next.load() < 100) std::this_thread::yield();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (checked < 3000 && std::chrono::steady_clock::now() < give_up) {
    const std::string d = r.dump();
    size_t pos = d.find('\n') + 1;
    while (pos < d.size()) {
      const size_t end = d.find('\n', pos);
      const std::string l = d.substr(pos, end - pos);
      std::smatch m;
      ASSERT_TRUE(std::regex_match(l, m, line)) << l;
      // Each operation's count is its sequence number: a torn or overwritten
      // entry would pair one operation's number with another's fields.
      EXPECT_EQ(m[1].str(), m[2].str()) << l;
      ++checked;
      pos = end + 1;
    }
  }
  stop.store(true);
  issuer.join();
  finisher.join();
  EXPECT_GE(checked, 3000);
}

}  // namespace
}  // namespace collie::detail
