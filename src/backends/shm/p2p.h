// P2PMatcher: point-to-point messages over per-pair byte rings.
//
// Each ordered pair of world ranks (s -> d) has a single-producer single-consumer
// ring in s's world segment. A message is a 32-byte header (group id, tag, dtype,
// size) followed by its payload, streamed through the ring in pieces, so a message
// of any size fits through a ring of any size. Receivers match messages by
// (source, group, tag) in arrival order against receives in posting order; a
// message nobody has asked for yet is copied into an "unexpected" buffer so the
// ring keeps flowing. Because rings are always drained, sends and receives
// complete in any order: no batch of isend/irecv can deadlock.
//
// One exception saves that copy where it is most common: a small message (at most
// a quarter of the ring) that is the last thing in the ring while this rank has
// no receive posted from its source stays in the ring, unread. In a loop of
// exchanges the faster rank's next message arrives just before its receive is
// posted (2 ranks: nearly every message), and that receive then reads it straight
// into its buffer. It cannot block anything: the sender has at least three
// quarters of the ring free, and the first byte written behind it, or any receive
// posted from that source, drains it as before.
//
// Most small transfers need none of the machinery below: a send that fits the
// ring's free space with nothing queued before it, a receive whose message lies
// whole at the front of the ring, and a waiting receive whose message arrives
// whole are each done in one step (send_at_once, receive_at_once,
// take_whole_into_first_posted); everything else takes the general path.
//
// With more ranks than CPUs, messages that do not fit the ring, between ranks that
// agreed on CMA are *pulled*: the ring carries only the header and the payload's
// address, and the receiver reads the payload straight from the sender's memory
// with one process_vm_readv (into the matched receive, or into an unexpected
// buffer when none is posted yet, so the no-deadlock rule holds). The receiver
// then counts the message as read (RingControl::pulls_done) and the send
// completes. Streaming such a message through the ring needs sender and receiver
// scheduled at the same time, over and over, which an oversubscribed machine
// rarely grants (4 ranks on 2 cores, 1 MiB: 1.2 ms streamed, 0.2 ms pulled). With
// a CPU per rank it depends on the machine (copy_path.h): where the world prefers
// single copies, messages of kPullFromBytes or more (kPullFromBytesOversubscribed
// with more ranks than CPUs) are pulled too (Intel Xeon,
// 2 ranks exchanging 512 KiB: 56 us streamed, 18 us pulled; data written just
// before the call, 55 against 45 us); elsewhere the stream wins up to the ring's
// size (both ranks copy at once; AMD EPYC, 2 ranks exchanging 1 MiB: 48 us
// streamed, 112 us pulled) and beyond it for data on 4 KiB pages, which
// process_vm_readv pins page by page; a message that does not fit the ring and
// lies on huge pages (huge_page_probe.h, asked by the sender) is pulled there
// too (8 MiB: 1.23-1.29 ms streamed, 0.78-0.87 ms pulled; on 4 KiB pages 0.98-1.15
// against 2.3-2.6 ms). A message whose payload lies in this rank's shared arena
// (a tensor from empty_shared, arena.h) is pulled on every machine, with or
// without CMA, from kArenaPullFromBytes or when it does not fit the ring: the
// ring carries the payload's chunk and offset, and the receiver copies it from
// its own mapping of that chunk (PeerArenas) with one memcpy, no system call and
// no pinning, whatever its page size (AMD EPYC, 2 ranks exchanging shared
// tensors, streamed against pulled: 256 KiB 17.6-18.0 -> 7.7-7.8 us, 1 MiB 55 ->
// 27-30 us, 2 MiB 100-189 -> 49-89 us). A send that fails (timeout) after
// publishing its header is marked cancelled (pulls_cancelled), so a receiver
// arriving late refuses to read memory the sender no longer guarantees, and one
// that was reading it then fails the receive rather than deliver what it read.
// COLLIE_P2P_PULL=always|never overrides the choice (always: the messages beyond
// the ring and those of kPullFromBytes or more, or of kArenaPullFromBytes or
// more in the arena; never: none, the arena's included; auto: as above).
//
// A pulled message that arrives before its receive is posted is *deferred*: left
// in the sender's memory for a grace. Its receive, typically posted a moment
// later (the header came while this rank was finishing a barrier or between two
// calls), then reads it straight into its buffer, one copy instead of two (4
// ranks on 2 cores: about a third of the messages of a ring exchange arrived
// early). After the grace, or when the engine stops, it is read into an
// unexpected buffer, so no order of sends and receives can deadlock: a sender
// waits at most the grace longer. The grace is at most what buffering the
// message takes (kBufferingBytesPerNs), so a sender whose receiver is busy
// elsewhere waits no longer than the copy its wait might save (2 ranks, a 64 KiB
// send to a rank computing for 20 ms: 1.1 ms with a flat 1 ms grace, 0.12-0.17
// ms now, most of it the receiver's progress thread waiting for a CPU). Where
// the progress thread finds the message (no caller is in a call: the owner
// computes, or is between two calls) the grace is at most kPullGrace, 1 ms: a
// rank computing may not receive for long (2 ranks, 32 MiB sent to a rank that
// receives 30 ms later: the send takes 3.6-4.4 ms, against 12.0-12.3 with the
// longer grace). Where a caller blocked in a receive from the same source finds
// it, at most kCrossingGrace: the receive waits for a later message from that
// source, which may come only once this one is read (the source blocked in this
// send, its receiver in a receive of another tag). Where a caller busy in
// another call finds it, at most kBusyCallerPullGrace, 20 ms (80 MiB): that
// call's end is when the next receive comes, and with more ranks than CPUs the
// ranks of a ring exchange called back to back are there for milliseconds when
// messages are of several MiB, each waiting for its own send to be read while
// the next call's message arrives; capped at 1 ms they buffered most messages,
// two more copies each (4 ranks on 2 cores, 32 MiB: 8.1-10.4 -> 3.96-4.07 ms a
// call, 64 MiB 16.4-18.1 -> 9.3-9.9 ms). (A receiver's parked progress thread
// may not hear the header's ring: the waiting sender rings again,
// nudge_receivers().) A caller blocked in a send to
// that source (send(), or wait() on an isend's handle) posts no receive before that send completes,
// and the send completes only once the peer reads it: there the message is buffered at once, no
// grace (both ranks sending first, then receiving, the usual head-to-head exchange; 2 ranks,
// blocking send then recv each way: 32 KiB 4.3
// -> 3.8 us, against streaming; 128 KiB 29.5 -> 8.7 us against the crossing
// grace below, 256 KiB 36 -> 15 us; 1.3 ms with the full grace). While this
// rank has other sends to that source in flight and a caller is driving the
// engine (it waits in some other blocking call, such as a batch whose send goes
// there), the grace is at most kCrossingGrace: its next receive may come soon.
// The progress thread, which runs only while no caller waits, keeps the longer
// grace: the caller is then between two calls, about to post the receive
// (batch_isend_irecv posts it just after its send), and competes with that
// thread for its core (2 ranks, send_recv of 2 MiB written just before each
// call: the thread buffered the message after 20 us and the receive copied it
// again, 330 against 230 us). Reads are acknowledged in order: pulls_done is the
// longest prefix of the source's pulled messages read.
//
// Used only under the engine's progress lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "backends/shm/arena.h"
#include "backends/shm/doorbell.h"
#include "backends/shm/message_buffer.h"
#include "backends/shm/shm_group.h"
#include "collie/dtype.h"
#include "core/small_pool.h"
#include "runtime/work.h"

namespace collie::detail {

struct SendRequest {
  WorkPtr work;
  int dst = 0;  // world rank
  uint64_t group_id = 0;
  int64_t tag = 0;
  const void* data = nullptr;
  uint64_t nbytes = 0;
  DType dtype = DType::Float32;
  double timeout_seconds = 300;
};

struct RecvRequest {
  WorkPtr work;
  int src = 0;  // world rank
  uint64_t group_id = 0;
  int64_t tag = 0;
  void* data = nullptr;
  uint64_t nbytes = 0;
  DType dtype = DType::Float32;
  double timeout_seconds = 300;
};

// How a request's errors begin: its Work's description, which for a transfer of
// a batch says which one (OpInfo::describe_transfer).
std::string describe(const SendRequest& r);
std::string describe(const RecvRequest& r);

class P2PMatcher {
 public:
  // `ring(world_rank, what)` rings that rank's doorbell; `finished(blocking)` is
  // called once per request that completed or failed (with its OpInfo::blocking).
  // `peer_arenas` maps the chunks that arena-pulled messages name (above).
  P2PMatcher(ShmGroup& world, PeerArenas& peer_arenas, std::function<void(int, Ring)> ring,
             std::function<void(bool)> finished);

  void add_send(SendRequest request);
  void add_recv(RecvRequest request);
  // The common small transfer, finished on the spot without the queues: a send
  // whose whole message fits the free part of its ring while nothing else to
  // that rank waits, and a receive whose message lies whole at the front of its
  // source's ring while nothing from that source is posted or buffered. True if
  // the request was done and completed; false leaves it untouched, for
  // add_send / add_recv. What they skip (the queue entry, the deadline clock,
  // the matching loop) was a fifth of a small exchange's instructions (2 ranks,
  // batch_isend_irecv of 8 B: 3,626 -> 2,869 per call on rank 0; 0.75 -> 0.59 us).
  // `work` is the request's Work, which the request itself does not hold yet
  // (ShmEngine::submit_send): its caller does, until it ends.
  bool send_at_once(Work& work, SendRequest& request);
  bool receive_at_once(Work& work, RecvRequest& request);
  // Who runs a pass: a caller waiting in a blocking call for its Work, or the
  // progress thread while no caller waits. Only a caller gives a deferred message
  // from a rank it sends to a short grace, none if it waits for that very send
  // (above).
  struct Runner {
    const Work* waits_on = nullptr;  // the caller's Work; nullptr: the progress thread
    static Runner progress_thread() { return {}; }
    static Runner caller(const Work& work) { return {&work}; }
    bool is_caller() const { return waits_on != nullptr; }
  };
  // Moves every transfer forward as far as possible. True if anything moved.
  bool advance(Runner runner);
  // The same for the sends to one world rank, or the messages from one (a new
  // request's first step).
  bool advance_sends(int dst);
  bool advance_incoming(int src);
  // Fails transfers past their deadline, or blocked on a dead peer.
  void check_stalls(std::chrono::steady_clock::time_point now, bool check_liveness);
  // Some send waits for its receiver to act (a pulled message unread, a full
  // ring). Its waiter calls nudge_receivers() before each sleep, and sleeps at
  // most kNudgeInterval: a receiver between calls may have its progress thread
  // parked (Doorbell), and would otherwise leave the sender waiting until it
  // calls into collie again.
  bool waits_on_receivers() const;
  void nudge_receivers();
  static constexpr auto kNudgeInterval = std::chrono::milliseconds(1);
  bool idle() const;
  // Some pulled message is deferred: advance() must run again within
  // shortest_grace() (progress lock held).
  bool has_deferred() const { return deferred_count_.load(std::memory_order_relaxed) != 0; }
  std::chrono::nanoseconds shortest_grace(Runner runner) const;
  // Reads the deferred messages past their grace (`all`: every one, before the
  // engine stops) into unexpected buffers. True if any was read.
  bool buffer_deferred_pulls(bool all, Runner runner);
  // The longest grace where the progress thread finds the message, where a
  // caller busy in another call does, and for a message from a rank this one is
  // sending to (above); shorter for messages that take less time to buffer.
  static constexpr auto kPullGrace = std::chrono::milliseconds(1);
  static constexpr auto kBusyCallerPullGrace = std::chrono::milliseconds(20);
  static constexpr auto kCrossingGrace = std::chrono::microseconds(20);
  // Messages advance_incoming() takes from one source before it returns (saying
  // it moved): a pass over a ring full of small messages that nobody receives yet
  // (each buffered) held the progress lock for milliseconds, which a caller with
  // a 4-byte send to make waited for (2 ranks, one flooding the other: that send
  // took a median 39-52 ms with pinned ranks, 3-15 ms with this bound and the
  // progress thread letting waiting callers in, engine.cc).
  static constexpr int kMessagesPerPass = 256;
  // What a grace allows per byte: about the time buffering takes (a copy into
  // the buffer and one out of it, ~4 GB/s together).
  static constexpr uint64_t kBufferingBytesPerNs = 4;

  // Which messages this rank pulls instead of streaming (above).
  struct PullRule {
    static constexpr uint64_t kNever = ~uint64_t{0};  // as a size: no message
    bool beyond_ring;     // messages that do not fit the ring
    uint64_t from_bytes;  // messages of at least this many bytes
    // Messages that do not fit the ring and whose data lies on huge pages
    // (huge_page_probe.h): where the world stages, reading such a message where
    // it lies beats streaming it through the ring one ring's worth at a time; on
    // 4 KiB pages the pinning process_vm_readv does costs more than it saves.
    bool beyond_ring_on_huge_pages = false;
    // Messages whose data lies in this rank's shared arena, of at least this
    // many bytes or beyond the ring (unless kNever): pulled from the arena with
    // or without CMA (above).
    uint64_t arena_from_bytes = kNever;
  };
  // Where the world prefers single copies, messages of this many bytes or more are
  // pulled. Each message streamed through a ring is handed from the sender's
  // cache to the receiver's, whether or not its data was; a pulled one is read
  // where it lies, which costs a system call and a rendezvous instead, and pays
  // the hand-off only for data just written. Intel Xeon, 2 ranks, an exchange
  // (batch_isend_irecv) streamed against pulled: 16 KiB 3.0 -> 2.0 us (inputs
  // written just before: 3.05 -> 3.5); 64 KiB 7.4 -> 3.7 (7.4 -> 7.9); OpenMPI,
  // which reads with CMA from 4 KiB: 2.6-3.2 (3.6) and 4.3-4.4 (7.6). 8 KiB gains
  // nothing clean (1.84 -> 1.75) and loses a third written (1.85 -> 2.67).
  static constexpr uint64_t kPullFromBytes = 16 << 10;
  // The same with more ranks than CPUs: a pulled message's sender waits until its
  // receiver is scheduled, a streamed one's does not (4 ranks on 2 cores, a ring
  // of 16-32 KiB messages after a barrier: 3-8 us streamed, 8-10 us pulled).
  static constexpr uint64_t kPullFromBytesOversubscribed = 128 << 10;
  // Messages of this many bytes or more whose data lies in the shared arena are
  // pulled from it: a memcpy from the mapped chunk costs no system call, so it
  // pays from smaller sizes than CMA. AMD EPYC, 2 ranks, an exchange
  // (batch_isend_irecv) of shared tensors streamed against pulled: 4 KiB
  // 1.18-1.23 against 1.28-2.26 us; 8 KiB 1.56-1.65 -> 1.32-1.39; 32 KiB 3.45
  // -> 1.29; 256 KiB 17.6-18.0 -> 7.7-7.8. With more ranks than CPUs
  // kPullFromBytesOversubscribed applies, for the same reason as above.
  static constexpr uint64_t kArenaPullFromBytes = 8 << 10;

 private:
  using Clock = std::chrono::steady_clock;
  struct Send {
    SendRequest req;
    bool header_written = false;
    uint64_t sent = 0;
    Clock::time_point last_progress;
    bool pulled = false;    // sent as a pulled message
    uint64_t pull_seq = 0;  // its number among the pulled messages to this destination
    ArenaRef arena{};       // pulled from the shared arena (present): where its data is
  };
  // Where a pulled message's payload lies in its sender's memory: an address,
  // read with CMA, or (arena.present) a range of the sender's shared arena.
  struct PulledFrom {
    uint64_t address = 0;
    ArenaRef arena{};
  };
  struct Recv {
    RecvRequest req;
    Clock::time_point last_progress;
  };
  struct Unexpected {
    MessageHeader header;
    MessageBuffer data;
    uint64_t received = 0;
    std::optional<Recv> claimant;  // a receive that matched while still arriving
    std::string error;             // a pulled message that could not be read: why
    // A deferred pulled message, still in the sender's memory: where, which, since when.
    bool deferred = false;
    PulledFrom pulled_from{};
    uint64_t pull_seq = 0;
    Clock::time_point arrived{};
  };
  // The message currently streaming in from one source.
  struct Incoming {
    bool in_payload = false;
    uint64_t remaining = 0;
    uint8_t* target = nullptr;         // where payload bytes go (nullptr: discard)
    std::optional<Recv> recv;          // matched receive, if any
    Unexpected* unexpected = nullptr;  // or the unexpected buffer
    uint64_t tail = 0;                 // bytes consumed from the ring (mirrors RingControl::tail)
  };

  ShmGroup& world_;
  PeerArenas& peer_arenas_;
  std::function<void(int, Ring)> ring_;
  std::function<void(bool)> finished_;
  std::atomic<size_t> deferred_count_{0};  // written under the progress lock
  // Every transfer adds an element to one of these and removes it again: their
  // nodes come from the per-thread pool (core/small_pool.h), not malloc.
  template <typename T>
  using PoolList = std::list<T, PoolAllocator<T>>;
  template <typename T>
  using PoolDeque = std::deque<T, PoolAllocator<T>>;
  std::vector<PoolDeque<Send>> sends_;             // by destination
  std::vector<PoolDeque<Send>> awaiting_pull_;     // by destination: pulled, not yet read
  std::vector<uint64_t> pulls_sent_;               // by destination
  // The destination's ring tail as last read (by destination). Sends trust it
  // while it shows room and read the shared tail only when it does not: that
  // line is the receiver's, and reading it on every send moved it between the
  // cores twice per message (the read, then the receiver's next write).
  std::vector<uint64_t> known_tail_;
  // The head of each outgoing ring as last published (this rank is its only
  // writer): read from here, not from the shared line the receiver polls.
  std::vector<uint64_t> sent_head_;
  std::vector<uint64_t> pulls_seen_;               // by source: pulled headers taken
  // Flags as bytes, not std::vector<bool>: every message tests one, and a bit's
  // test is an index split into word and mask.
  std::vector<uint8_t> channel_broken_;            // by destination
  std::vector<uint8_t> source_broken_;             // by source: its stream was corrupt
  std::vector<PoolList<Recv>> posted_;             // by source
  std::vector<PoolList<Unexpected>> unexpected_;   // by source
  std::vector<Incoming> incoming_;                 // by source
  const PullRule pull_;  // which messages are pulled (COLLIE_P2P_PULL, copy path)

  // Messages larger than this are refused as corrupt headers (1 TiB).
  static constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 40;
  // A pulled header arrived from `src` (the payload's location already read):
  // read the payload into the matching receive or an unexpected buffer, then
  // count it read.
  void take_pulled(int src, const MessageHeader& h, PulledFrom from);
  // Copies bytes [at, at + n) of pulled message `u` from `src` to `dst`, with CMA
  // or from the mapped arena chunk; CommError if that memory cannot be read, or
  // if the sender gave up on the message before the copy ended (it may have been
  // reusing the memory meanwhile).
  void read_pulled(int src, const Unexpected& u, uint64_t at, void* dst, uint64_t n);
  // Completes the pulled sends to `dst` that the receiver has read.
  bool complete_pulled(int dst);
  // Marks `u` no longer deferred (and counts it out of deferred_count_).
  void undefer(Unexpected& u);
  // This rank has sends to `peer` not yet completed (queued, streaming, or
  // waiting to be pulled).
  bool sending_to(int peer) const;
  // `work` is a send (send(), an isend's wait()) to `peer` not yet completed.
  bool is_send_to(const Work& work, int peer) const;
  // `work` is a receive (recv(), an irecv's wait()) from `peer` still posted.
  bool is_receive_from(const Work& work, int peer) const;
  // How long a deferred message of `nbytes` from `src` waits for its receive (above).
  std::chrono::nanoseconds grace_for(int src, Runner runner, uint64_t nbytes) const;
  // Reads pulled message `u` from `src` into its unexpected buffer.
  void buffer_pulled(int src, Unexpected& u);
  // Reads pulled message `u` straight into the receive `r` it matched, and completes it.
  void deliver_pulled(Unexpected& u, Recv& r);
  // Publishes pulls_done for `src`: every pulled message before the first deferred one.
  void acknowledge_pulls(int src);
  // CommError if the sender of pulled message `seq` from `src` gave up on it.
  void check_pull_not_cancelled(int src, uint64_t seq) const;
  // The error of send `s`, stuck at `peer`, or nullptr while it may still go on:
  // CommError "<op>: rank P (pid X) <dead>" if the peer died, TimeoutError
  // "<op>: rank P <silent> T s <hint>" past the deadline.
  std::exception_ptr send_stalled(const Send& s, int peer, bool peer_dead, Clock::time_point now,
                                  const char* dead, const char* silent, const char* hint) const;
  // Appends n payload bytes at ring position `pos` to the unexpected message
  // arriving from `src`; false (source broken) when memory runs out.
  bool append_unexpected(int src, const uint8_t* ring, uint64_t pos, uint64_t n);
  // Checks a header read from a peer's ring: magic, dtype code, size.
  static bool valid_header(const MessageHeader& h, std::string* why);
  // Cuts a source off after corrupt data: fails everything waiting on it.
  void break_source(int src, const std::string& what);
  // Whether the message whose header `h` starts the `avail` unread bytes from
  // `src` stays in the ring for now instead of going to an unexpected buffer: a
  // whole, small, ordinary message with nothing behind it while no receive from
  // `src` is posted (the next call's message, arriving before its receive). The
  // receive posted next reads it straight into its buffer; any later byte from
  // `src`, or any receive posted from `src`, drains it as before.
  bool leave_in_ring(int src, const MessageHeader& h, uint64_t avail) const;
  // The message whose header `h` starts the `avail` unread bytes from `src` at
  // ring position `pos`, when it is whole and exactly what the first receive
  // posted from `src` expects, is copied into that receive, which completes:
  // true. The waiting receive's usual case, on its critical path, without the
  // streaming state (on_header) and its bookkeeping. False: nothing done.
  bool take_whole_into_first_posted(int src, const MessageHeader& h, const uint8_t* ring,
                                    uint64_t pos, uint64_t avail);
  void on_header(int src, const MessageHeader& h);
  void deliver_unexpected(Unexpected& u, Recv& r);
  void complete(Work& work, std::exception_ptr error);
  static bool matches(const MessageHeader& h, const RecvRequest& r);
  std::exception_ptr size_mismatch(int src, const MessageHeader& h, const RecvRequest& r) const;
};

}  // namespace collie::detail
