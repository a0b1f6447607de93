// P2PMatcher in one process: a one-rank world whose rank sends to itself through
// its own ring, so every step of a message (written, left in the ring, drained
// into an unexpected buffer, received) can be observed between two calls.
// Checked here: which messages stay in the ring unread until their receive is
// posted (p2p.h), and that everything else drains as before, in order.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/shm/arena.h"
#include "backends/shm/p2p.h"
#include "backends/shm/shm_group.h"
#include "collie/errors.h"
#include "runtime/work.h"
#include "self_world.h"

namespace collie::detail {
namespace {

constexpr uint64_t kGroupId = 0x77;
constexpr size_t kRingBytes = 4096;

ShmGroupConfig self_world() { return self_world_config("matcher", kGroupId, kRingBytes, 5); }

// A matcher over a fresh one-rank world, with helpers to send and receive int32
// vectors to and from itself.
class SelfMatcher {
 public:
  SelfMatcher()
      : world_(self_world()),
        peer_arenas_(world_.config().job_id),
        matcher_(
            world_, peer_arenas_, [](int, Ring) {}, [](bool) {}) {}

  // Sends `values` with `tag`; the message is in the ring when this returns.
  void send(const std::vector<int32_t>& values, int64_t tag) {
    sent_.push_back(values);
    SendRequest r = send_request(sent_.back(), tag);
    matcher_.add_send(r);
    matcher_.advance_sends(0);
    ASSERT_TRUE(r.work->is_completed()) << "a send that fits the ring completes when written";
  }

  // Posts a receive of `count` int32 with `tag` and returns its buffer and Work.
  std::pair<std::shared_ptr<std::vector<int32_t>>, WorkPtr> post_recv(size_t count, int64_t tag) {
    auto buffer = std::make_shared<std::vector<int32_t>>(count, -1);
    RecvRequest r = recv_request(*buffer, tag);
    WorkPtr work = r.work;
    matcher_.add_recv(r);
    return {buffer, work};
  }

  // The same through the at-once paths: false if the matcher declined (the
  // request then went nowhere and the receive's buffer is untouched).
  bool send_at_once(const std::vector<int32_t>& values, int64_t tag) {
    sent_.push_back(values);
    SendRequest r = send_request(sent_.back(), tag);
    if (!matcher_.send_at_once(*r.work, r)) return false;
    EXPECT_TRUE(r.work->is_completed()) << "a send done at once is complete";
    return true;
  }
  struct AtOnce {
    bool taken;
    std::shared_ptr<std::vector<int32_t>> buffer;
    WorkPtr work;
  };
  AtOnce receive_at_once(size_t count, int64_t tag) {
    auto buffer = std::make_shared<std::vector<int32_t>>(count, -1);
    RecvRequest r = recv_request(*buffer, tag);
    const bool taken = matcher_.receive_at_once(*r.work, r);
    return {taken, buffer, r.work};
  }

  // A send left to stream through the ring (its Work, not yet complete if the
  // message is larger than the room).
  WorkPtr queue_send(const std::vector<int32_t>& values, int64_t tag) {
    sent_.push_back(values);
    SendRequest r = send_request(sent_.back(), tag);
    WorkPtr work = r.work;
    matcher_.add_send(r);
    matcher_.advance_sends(0);
    return work;
  }
  // Writes raw bytes into the ring at its head and publishes them, as a peer
  // writing a message by hand would (the ring is fresh: nothing wraps).
  void write_raw(const void* bytes, size_t n) {
    RingControl& ctl = world_.ring_control(0, 0);
    const uint64_t head = ctl.head.load();
    std::memcpy(world_.ring_data(0, 0) + head, bytes, n);
    ctl.head.store(head + n);
  }
  // Pulled messages from this rank that it has read (RingControl::pulls_done).
  uint64_t pulls_done() const { return world_.ring_control(0, 0).pulls_done.load(); }
  bool has_deferred() const { return matcher_.has_deferred(); }
  const ShmGroup& world() const { return world_; }
  bool advance_sends() { return matcher_.advance_sends(0); }
  bool advance_incoming() { return matcher_.advance_incoming(0); }
  // What a pass by `runner` does with deferred messages: buffers those past
  // their grace. True if it buffered any.
  bool buffer_deferred_past_their_grace(P2PMatcher::Runner runner) {
    return matcher_.buffer_deferred_pulls(/*all=*/false, runner);
  }
  std::chrono::nanoseconds shortest_grace(P2PMatcher::Runner runner) const {
    return matcher_.shortest_grace(runner);
  }
  // What the engine does with them when it stops: buffers every one.
  bool buffer_all_deferred() {
    return matcher_.buffer_deferred_pulls(/*all=*/true, P2PMatcher::Runner::progress_thread());
  }
  // Bytes written to the ring and not yet read by the receiving side.
  uint64_t unread_bytes() const {
    const RingControl& ctl = world_.ring_control(0, 0);
    return ctl.head.load() - ctl.tail.load();
  }

 private:
  // A request of `count` int32 at `data` with `tag`, to or from rank 0 (this
  // rank: a request's peer defaults to 0).
  template <typename Request, typename Pointer>
  static Request request(OpKind kind, Pointer data, size_t count, int64_t tag) {
    Request r;
    r.work = std::make_shared<Work>(info(kind));
    r.group_id = kGroupId;
    r.tag = tag;
    r.data = data;
    r.nbytes = count * sizeof(int32_t);
    r.dtype = DType::Int32;
    return r;
  }
  static SendRequest send_request(const std::vector<int32_t>& values, int64_t tag) {
    return request<SendRequest>(OpKind::Send, values.data(), values.size(), tag);
  }
  static RecvRequest recv_request(std::vector<int32_t>& buffer, int64_t tag) {
    return request<RecvRequest>(OpKind::Recv, buffer.data(), buffer.size(), tag);
  }
  static OpInfo info(OpKind kind) {
    OpInfo i;
    i.kind = kind;
    return i;
  }
  ShmGroup world_;
  PeerArenas peer_arenas_;
  P2PMatcher matcher_;
  std::vector<std::vector<int32_t>> sent_;  // kept alive until the matcher is gone
};

std::vector<int32_t> iota_from(int32_t first, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = first + static_cast<int32_t>(i);
  return v;
}

constexpr uint64_t kHeaderBytes = sizeof(MessageHeader);

// `work` failed with the CommError of a message of `sent` bytes into a receive
// of `expected`, naming both sizes.
void expect_size_mismatch(Work& work, int sent, int expected) {
  try {
    work.wait();
    FAIL() << "a " << sent << "-byte message into a " << expected << "-byte receive must fail";
  } catch (const CommError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sent " + std::to_string(sent) + " bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("expects " + std::to_string(expected) + " bytes"), std::string::npos)
        << what;
  }
}

TEST(P2PMatcher, SmallMessageWithNoReceivePostedStaysInTheRingForItsReceive) {
  SelfMatcher m;
  m.send(iota_from(10, 3), /*tag=*/1);
  EXPECT_FALSE(m.advance_incoming());
  EXPECT_EQ(m.unread_bytes(), kHeaderBytes + 12) << "the message is left unread";
  auto [got, work] = m.post_recv(3, 1);
  EXPECT_FALSE(work->is_completed());
  EXPECT_TRUE(m.advance_incoming());
  ASSERT_TRUE(work->is_completed());
  work->wait();  // rethrows a failure
  EXPECT_EQ(*got, iota_from(10, 3));
  EXPECT_EQ(m.unread_bytes(), 0u);
}

TEST(P2PMatcher, AMessageWrittenBehindAnUnreadOneDrainsBothInOrder) {
  SelfMatcher m;
  m.send(iota_from(100, 4), 1);
  m.advance_incoming();
  ASSERT_EQ(m.unread_bytes(), kHeaderBytes + 16);
  m.send(iota_from(200, 2), 1);
  m.send(iota_from(300, 5), 2);
  m.advance_incoming();
  // The first two went to unexpected buffers; the last is alone at the end again.
  EXPECT_EQ(m.unread_bytes(), kHeaderBytes + 20);
  auto [a, wa] = m.post_recv(4, 1);
  auto [b, wb] = m.post_recv(2, 1);
  ASSERT_TRUE(wa->is_completed() && wb->is_completed()) << "taken from unexpected buffers";
  EXPECT_EQ(*a, iota_from(100, 4)) << "same tag: first sent, first received";
  EXPECT_EQ(*b, iota_from(200, 2));
  auto [c, wc] = m.post_recv(5, 2);
  m.advance_incoming();
  ASSERT_TRUE(wc->is_completed());
  EXPECT_EQ(*c, iota_from(300, 5));
  EXPECT_EQ(m.unread_bytes(), 0u);
}

TEST(P2PMatcher, AReceiveForAnotherMessageDrainsTheUnreadOne) {
  SelfMatcher m;
  m.send(iota_from(1, 2), /*tag=*/7);
  m.advance_incoming();
  ASSERT_EQ(m.unread_bytes(), kHeaderBytes + 8);
  // A receive waiting on this source: whatever is in the ring must be read now,
  // so that a dead sender can be told apart from one with data still to come.
  auto [other, wo] = m.post_recv(2, /*tag=*/8);
  m.advance_incoming();
  EXPECT_EQ(m.unread_bytes(), 0u);
  EXPECT_FALSE(wo->is_completed());
  auto [got, wg] = m.post_recv(2, 7);
  ASSERT_TRUE(wg->is_completed());
  EXPECT_EQ(*got, iota_from(1, 2));
  m.send(iota_from(5, 2), 8);
  m.advance_incoming();
  ASSERT_TRUE(wo->is_completed());
  EXPECT_EQ(*other, iota_from(5, 2));
}

TEST(P2PMatcher, MessagesOverAQuarterOfTheRingAreBufferedAsBefore) {
  SelfMatcher m;
  const size_t quarter = kRingBytes / 4 / sizeof(int32_t);
  m.send(iota_from(0, quarter), 1);  // payload exactly a quarter: left in the ring
  m.advance_incoming();
  EXPECT_EQ(m.unread_bytes(), kHeaderBytes + kRingBytes / 4);
  auto [q, wq] = m.post_recv(quarter, 1);
  m.advance_incoming();
  ASSERT_TRUE(wq->is_completed());
  m.send(iota_from(0, quarter + 1), 1);  // one element more: buffered
  m.advance_incoming();
  EXPECT_EQ(m.unread_bytes(), 0u);
  auto [big, wb] = m.post_recv(quarter + 1, 1);
  ASSERT_TRUE(wb->is_completed());
  EXPECT_EQ(*big, iota_from(0, quarter + 1));
}

TEST(P2PMatcher, AWrongSizedReceiveOfAnUnreadMessageFailsNamingBothSizes) {
  SelfMatcher m;
  m.send(iota_from(0, 3), 1);
  m.advance_incoming();
  auto [got, work] = m.post_recv(4, 1);
  m.advance_incoming();
  ASSERT_TRUE(work->is_completed());
  expect_size_mismatch(*work, 12, 16);
  EXPECT_EQ(m.unread_bytes(), 0u) << "the message is consumed (discarded)";
}

TEST(P2PMatcher, AtOnceASmallMessageIsWrittenAndTakenWhole) {
  SelfMatcher m;
  ASSERT_TRUE(m.send_at_once(iota_from(40, 5), /*tag=*/3));
  EXPECT_EQ(m.unread_bytes(), kHeaderBytes + 20);
  auto got = m.receive_at_once(5, 3);
  ASSERT_TRUE(got.taken);
  ASSERT_TRUE(got.work->is_completed());
  got.work->wait();
  EXPECT_EQ(*got.buffer, iota_from(40, 5));
  EXPECT_EQ(m.unread_bytes(), 0u);
}

TEST(P2PMatcher, AtOnceTakesOnlyTheMessageAskedFor) {
  SelfMatcher m;
  m.send(iota_from(7, 3), /*tag=*/1);
  // Another tag, size or nothing there yet: declined, nothing read or written.
  for (auto [count, tag] : {std::pair<size_t, int64_t>{3, 2}, {4, 1}, {2, 1}}) {
    auto other = m.receive_at_once(count, tag);
    EXPECT_FALSE(other.taken) << count << " elements, tag " << tag;
    EXPECT_FALSE(other.work->is_completed());
    EXPECT_EQ(*other.buffer, std::vector<int32_t>(count, -1));
    EXPECT_EQ(m.unread_bytes(), kHeaderBytes + 12);
  }
  auto got = m.receive_at_once(3, 1);
  ASSERT_TRUE(got.taken);
  EXPECT_EQ(*got.buffer, iota_from(7, 3));
  EXPECT_FALSE(m.receive_at_once(3, 1).taken) << "the ring is empty now";
}

TEST(P2PMatcher, AtOnceNeverOvertakesABufferedMessageOfTheSameTag) {
  SelfMatcher m;
  const size_t big = kRingBytes / 4 / sizeof(int32_t) + 1;  // over a quarter: buffered
  m.send(iota_from(0, big), 1);
  m.advance_incoming();
  ASSERT_EQ(m.unread_bytes(), 0u);
  ASSERT_TRUE(m.send_at_once(iota_from(500, 2), 1));
  EXPECT_FALSE(m.receive_at_once(2, 1).taken) << "the buffered message is first in line";
  auto [first, w1] = m.post_recv(big, 1);
  ASSERT_TRUE(w1->is_completed());
  EXPECT_EQ(*first, iota_from(0, big));
  auto second = m.receive_at_once(2, 1);
  ASSERT_TRUE(second.taken);
  EXPECT_EQ(*second.buffer, iota_from(500, 2));
}

TEST(P2PMatcher, AtOnceASendWaitsBehindOneStillStreaming) {
  SelfMatcher m;
  const size_t large = 1500;  // 6,000 bytes through a 4,096-byte ring
  WorkPtr streaming = m.queue_send(iota_from(0, large), 1);
  EXPECT_FALSE(streaming->is_completed());
  m.advance_incoming();  // reads what is there (buffered: no receive yet)
  ASSERT_EQ(m.unread_bytes(), 0u) << "the ring has room again";
  EXPECT_FALSE(m.send_at_once(iota_from(900, 1), 2)) << "it would pass the rest of the one above";
  m.advance_sends();
  ASSERT_TRUE(streaming->is_completed());
  m.advance_incoming();
  auto [got, work] = m.post_recv(large, 1);
  ASSERT_TRUE(work->is_completed());
  EXPECT_EQ(*got, iota_from(0, large));
  ASSERT_TRUE(m.send_at_once(iota_from(1100, 1), 2)) << "nothing queued any more";
  auto last = m.receive_at_once(1, 2);
  ASSERT_TRUE(last.taken);
  EXPECT_EQ(*last.buffer, iota_from(1100, 1));
}

TEST(P2PMatcher, AWaitingReceiveTakesItsWholeMessageStraight) {
  SelfMatcher m;
  auto [got, work] = m.post_recv(4, 9);
  m.advance_incoming();
  EXPECT_FALSE(work->is_completed());
  m.send(iota_from(60, 4), 9);
  EXPECT_TRUE(m.advance_incoming());
  ASSERT_TRUE(work->is_completed());
  work->wait();
  EXPECT_EQ(*got, iota_from(60, 4));
  EXPECT_EQ(m.unread_bytes(), 0u);
}

TEST(P2PMatcher, AMessageForALaterPostedReceiveGoesToThatOne) {
  SelfMatcher m;
  auto [first, w1] = m.post_recv(2, 1);
  auto [second, w2] = m.post_recv(2, 2);
  auto [third, w3] = m.post_recv(3, 1);
  m.send(iota_from(10, 2), 2);  // for the second receive, not the first posted
  m.send(iota_from(20, 2), 1);  // the first
  m.send(iota_from(30, 3), 1);  // the third
  m.advance_incoming();
  ASSERT_TRUE(w1->is_completed() && w2->is_completed() && w3->is_completed());
  EXPECT_EQ(*first, iota_from(20, 2));
  EXPECT_EQ(*second, iota_from(10, 2));
  EXPECT_EQ(*third, iota_from(30, 3));
}

TEST(P2PMatcher, AWaitingReceiveOfTheWrongSizeFailsNamingBothSizes) {
  SelfMatcher m;
  auto [got, work] = m.post_recv(2, 1);
  m.send(iota_from(0, 3), 1);
  m.advance_incoming();
  ASSERT_TRUE(work->is_completed());
  expect_size_mismatch(*work, 12, 8);
  EXPECT_EQ(*got, std::vector<int32_t>(2, -1)) << "nothing written into the receive";
}

// A pulled message read with CMA (the one-rank world agrees on it: no peer to
// probe) whose header claims more than the sender's memory holds: the last
// byte of the claimed range is unmapped. The message is buffered (its grace
// passes while nobody receives): the claim's last byte is read first, before
// a buffer of the claimed size is allocated, and fails. Its receive fails,
// naming that one-byte read; the message before it arrives intact.
TEST(P2PMatcher, APulledMessageClaimingMoreThanItsSenderHoldsFailsOnlyItsReceive) {
  SelfMatcher m;
  if (!m.world().cma()) GTEST_SKIP() << "CMA is off here (COLLIE_CMA=0 or no permission)";
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* pages = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(munmap(static_cast<uint8_t*>(pages) + page, page), 0);  // the claim's end
  const size_t count = 2 * page / sizeof(int32_t);
  MessageHeader h{kPulledMessageMagic, static_cast<uint32_t>(DType::Int32), /*tag=*/1, kGroupId,
                  count * sizeof(int32_t)};
  const uint64_t address = reinterpret_cast<uint64_t>(pages);
  m.send(iota_from(5, 3), /*tag=*/2);  // first: send() writes at the head it knows
  m.write_raw(&h, sizeof h);
  m.write_raw(&address, sizeof address);
  m.advance_incoming();
  EXPECT_TRUE(m.buffer_all_deferred()) << "read now, as when the engine stops";
  EXPECT_EQ(m.pulls_done(), 1u) << "acknowledged: the sender's wait ends";
  auto [got, work] = m.post_recv(count, 1);
  ASSERT_TRUE(work->is_completed());
  try {
    work->wait();
    ADD_FAILURE() << "a message whose memory cannot be read must fail its receive";
  } catch (const CommError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("reading 1 byte from rank 0"), std::string::npos) << what;
    EXPECT_NE(what.find("process_vm_readv failed"), std::string::npos) << what;
    EXPECT_EQ(what.find("no memory"), std::string::npos) << what;
  }
  EXPECT_EQ(*got, std::vector<int32_t>(count, -1)) << "nothing written into the receive";
  auto [next, next_work] = m.post_recv(3, 2);
  ASSERT_TRUE(next_work->is_completed());
  next_work->wait();
  EXPECT_EQ(*next, iota_from(5, 3));
  munmap(pages, page);
}

// Arena-pulled messages (p2p.h): the ring carries a header and the payload's
// chunk and offset in the sender's shared arena, and the receiver copies the
// payload from its own mapping of that chunk (no CMA involved: the header
// names no address). The sender's arena is this process's (rank 0 sends to
// itself), configured for the world's job.
class ArenaPulled : public ::testing::Test {
 protected:
  void SetUp() override {
    arena_.configure(m_.world().config().job_id, 0);
    auto [data, free_block] = arena_.allocate(3 * 4096);
    block_ = static_cast<int32_t*>(data);
    free_block_ = std::move(free_block);
    for (int32_t i = 0; i < 3 * 1024; ++i) block_[i] = 1000 + i;
  }
  void TearDown() override {
    for (auto& [values, free_block] : more_blocks_) free_block(values);
    free_block_(block_);
    arena_.shutdown();
  }

  // Writes the header of an int32 message of `count` elements with `tag`
  // whose payload is `location`.
  void write_pulled(size_t count, int64_t tag, ArenaRef location) {
    MessageHeader h{kArenaPulledMessageMagic, static_cast<uint32_t>(DType::Int32), tag, kGroupId,
                    count * sizeof(int32_t)};
    location.present = 0;  // what a peer says here is not trusted
    m_.write_raw(&h, sizeof h);
    m_.write_raw(&location, sizeof location);
  }
  // Where element `first` of the block lies in the arena.
  ArenaRef element(size_t first) const { return arena_.locate(block_ + first, sizeof(int32_t)); }
  // Posts a receive of `count` int32 with `tag`, which the buffered message
  // completes at once with the values filled_block(count, step) wrote.
  void expect_received_from_buffer(size_t count, int64_t tag, int32_t step) {
    auto [got, work] = m_.post_recv(count, tag);
    ASSERT_TRUE(work->is_completed()) << "the receive takes the message from its buffer";
    work->wait();
    for (size_t i = 0; i < count; i += 1021) {
      ASSERT_EQ((*got)[i], step * static_cast<int32_t>(i)) << "element " << i;
    }
    EXPECT_EQ(got->back(), step * static_cast<int32_t>(count - 1));
  }
  // A block of `count` int32 in the arena, element i = step * i; freed at
  // TearDown.
  int32_t* filled_block(size_t count, int32_t step) {
    auto [data, free_block] = arena_.allocate(count * sizeof(int32_t));
    if (data == nullptr) return nullptr;
    auto* values = static_cast<int32_t*>(data);
    for (size_t i = 0; i < count; ++i) values[i] = step * static_cast<int32_t>(i);
    more_blocks_.emplace_back(values, std::move(free_block));
    return values;
  }

  SelfMatcher m_;
  SharedArena& arena_ = SharedArena::instance();
  int32_t* block_ = nullptr;
  std::function<void(void*)> free_block_;
  std::vector<std::pair<int32_t*, std::function<void(void*)>>> more_blocks_;  // filled_block()
};

TEST_F(ArenaPulled, APostedReceiveGetsThePayloadFromTheChunkItNames) {
  auto [got, work] = m_.post_recv(50, /*tag=*/4);
  write_pulled(50, 4, element(100));
  EXPECT_TRUE(m_.advance_incoming());
  ASSERT_TRUE(work->is_completed());
  work->wait();
  EXPECT_EQ(*got, iota_from(1100, 50));
  EXPECT_EQ(m_.pulls_done(), 1u) << "the read is acknowledged, so the send can complete";
  EXPECT_EQ(m_.unread_bytes(), 0u) << "the ring held only the header and the location";
}

TEST_F(ArenaPulled, AMessageNobodyReceivesYetIsLeftInTheArenaForItsReceive) {
  write_pulled(2048, 5, element(7));  // spans a page boundary of the block
  m_.advance_incoming();
  EXPECT_TRUE(m_.has_deferred()) << "deferred: left where it lies for a grace";
  EXPECT_EQ(m_.pulls_done(), 0u) << "not yet read";
  auto [got, work] = m_.post_recv(2048, 5);
  ASSERT_TRUE(work->is_completed()) << "the new receive reads the deferred message";
  work->wait();
  EXPECT_EQ(*got, iota_from(1007, 2048));
  EXPECT_FALSE(m_.has_deferred());
  EXPECT_EQ(m_.pulls_done(), 1u);
}

// A deferred message's grace is what buffering it would take, at most 20 ms
// where a caller busy in another call runs the pass (its next receive comes
// when that call ends: with more ranks than CPUs a back-to-back exchange's next
// message arrives milliseconds early) and at most 1 ms where the progress
// thread does (the owner may be computing). 32 MiB (buffering: 8.4 ms), 1.5 ms
// after it arrived: the caller leaves it where it lies, the progress thread
// reads it, and its receive takes it whole from the buffer. (Where a loaded
// machine stalls this thread past the grace, the caller's choice is not
// checked: it may then rightly read the message.)
TEST_F(ArenaPulled, ALargeDeferredMessageWaitsLongerForABusyCallerThanForTheProgressThread) {
  const size_t count = size_t{8} << 20;  // int32: 32 MiB
  int32_t* large = filled_block(count, 3);
  ASSERT_NE(large, nullptr);
  write_pulled(count, 6, arena_.locate(large, sizeof(int32_t)));
  const auto before_arrival = std::chrono::steady_clock::now();
  m_.advance_incoming();
  ASSERT_TRUE(m_.has_deferred());
  OpInfo in_a_collective;
  in_a_collective.kind = OpKind::AllReduce;
  const Work busy_caller(in_a_collective);
  const auto as_busy_caller = P2PMatcher::Runner::caller(busy_caller);
  const auto as_progress_thread = P2PMatcher::Runner::progress_thread();
  const std::chrono::nanoseconds buffering(count * sizeof(int32_t) / 4);  // 4 bytes a ns
  EXPECT_EQ(m_.shortest_grace(as_busy_caller), buffering);
  EXPECT_EQ(m_.shortest_grace(as_progress_thread), std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::microseconds(1500));
  const bool buffered_by_caller = m_.buffer_deferred_past_their_grace(as_busy_caller);
  // An upper bound of the message's age at that pass: where a loaded machine
  // stalled this thread past the grace, the caller may rightly have read it.
  if (std::chrono::steady_clock::now() - before_arrival < buffering) {
    EXPECT_FALSE(buffered_by_caller) << "a busy caller leaves it where it lies";
    EXPECT_TRUE(m_.has_deferred());
  }
  if (!buffered_by_caller) {
    EXPECT_TRUE(m_.buffer_deferred_past_their_grace(as_progress_thread))
        << "the progress thread reads it";
  }
  EXPECT_FALSE(m_.has_deferred());
  EXPECT_EQ(m_.pulls_done(), 1u) << "acknowledged: the sender's wait ends";
  expect_received_from_buffer(count, 6, 3);
}

// A caller blocked in a receive from the sender waits for a later message from
// it, which may come only once the deferred one is read (the sender blocked in
// that send: two tags received in the other order): the short crossing grace,
// not a busy caller's. 1 MiB (buffering: 262 us): read 100 us after it arrived
// by the blocked receive's pass, then received from the buffer.
TEST_F(ArenaPulled, AMessageDeferredWhileTheCallerAwaitsAnotherFromItsSenderIsReadSoon) {
  const size_t count = size_t{256} << 10;  // int32: 1 MiB
  int32_t* block = filled_block(count, 7);
  ASSERT_NE(block, nullptr);
  auto [later, later_work] = m_.post_recv(4, /*tag=*/9);  // the caller waits on this
  write_pulled(count, /*tag=*/6, arena_.locate(block, sizeof(int32_t)));
  m_.advance_incoming();
  ASSERT_TRUE(m_.has_deferred()) << "tag 6 matches no posted receive";
  const auto blocked_in_receive = P2PMatcher::Runner::caller(*later_work);
  OpInfo in_a_collective;
  in_a_collective.kind = OpKind::AllReduce;
  const Work busy_caller(in_a_collective);
  EXPECT_EQ(m_.shortest_grace(blocked_in_receive), P2PMatcher::kCrossingGrace);
  EXPECT_EQ(m_.shortest_grace(P2PMatcher::Runner::caller(busy_caller)),
            std::chrono::nanoseconds(count * sizeof(int32_t) / 4));
  std::this_thread::sleep_for(std::chrono::microseconds(100));
  EXPECT_TRUE(m_.buffer_deferred_past_their_grace(blocked_in_receive));
  EXPECT_EQ(m_.pulls_done(), 1u) << "acknowledged: the sender's wait ends";
  expect_received_from_buffer(count, 6, 7);
  EXPECT_FALSE(later_work->is_completed()) << "tag 9 never came";
}

TEST_F(ArenaPulled, ALocationOutsideTheSendersChunksFailsOnlyThatReceive) {
  auto [past, w_past] = m_.post_recv(8, 1);
  auto [none, w_none] = m_.post_recv(8, 2);
  auto [after, w_after] = m_.post_recv(8, 3);
  ArenaRef beyond = element(0);
  beyond.offset = uint64_t{1} << 40;  // far past the end of the chunk
  write_pulled(8, 1, beyond);
  ArenaRef missing = element(0);
  missing.chunk = 7;  // no such chunk
  write_pulled(8, 2, missing);
  write_pulled(8, 3, element(16));
  m_.advance_incoming();
  ASSERT_TRUE(w_past->is_completed() && w_none->is_completed() && w_after->is_completed());
  EXPECT_THROW(
      {
        try {
          w_past->wait();
        } catch (const CommError& e) {
          EXPECT_NE(std::string(e.what()).find("of its shared arena chunk"), std::string::npos)
              << e.what();
          throw;
        }
      },
      CommError);
  EXPECT_THROW(
      {
        try {
          w_none->wait();
        } catch (const CommError& e) {
          EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
          throw;
        }
      },
      CommError);
  w_after->wait();
  EXPECT_EQ(*after, iota_from(1016, 8)) << "the stream carries on after a bad location";
  EXPECT_EQ(*past, std::vector<int32_t>(8, -1)) << "nothing written into a failed receive";
  EXPECT_EQ(m_.pulls_done(), 3u) << "failed reads are acknowledged too";
}

}  // namespace
}  // namespace collie::detail
