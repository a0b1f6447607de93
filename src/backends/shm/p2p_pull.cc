// The pulled-message half of P2PMatcher (p2p.h): large messages between ranks
// that agreed on CMA, read by the receiver from the sender's memory; deferred
// reads and their in-order acknowledgement.
#include <algorithm>
#include <cstring>
#include <string>

#include "backends/shm/cma.h"
#include "backends/shm/large_copy.h"
#include "backends/shm/p2p.h"
#include "backends/shm/stream_copy.h"
#include "collie/errors.h"

namespace collie::detail {

void P2PMatcher::check_pull_not_cancelled(int src, uint64_t seq) const {
  const RingControl& ctl = world_.ring_control(src, world_.rank());
  if (ctl.pulls_cancelled.load(std::memory_order_acquire) >= seq) {
    throw CommError("rank " + std::to_string(src) +
                    " gave up on this message (its send timed out) before it was read");
  }
}

void P2PMatcher::read_pulled(int src, const Unexpected& u, uint64_t at, void* dst, uint64_t n) {
  check_pull_not_cancelled(src, u.pull_seq);
  if (u.pulled_from.arena.present) {
    // The whole message's range is checked against the chunk, so a corrupt
    // offset or size fails here instead of reading past the mapping.
    const uint8_t* payload = peer_arenas_.resolve(src, u.pulled_from.arena, u.header.nbytes);
    // A message that stays in cache in large_copy's pieces, a larger one in one
    // `rep movsb` (stream_copy.h, kStreamingMessageBytes). An empty receive's
    // dst may be null.
    if (n > 0 && u.header.nbytes >= kStreamingMessageBytes) {
      large_copy_streaming(dst, payload + at, n);
    } else if (n > 0) {
      large_copy(dst, payload + at, n);
    }
  } else {
    cma_read(world_.pid(src), dst, u.pulled_from.address + at, n, src);
  }
  // A sender whose send timed out meanwhile may have been rewriting that memory
  // while it was copied: refuse what was read rather than deliver it torn.
  check_pull_not_cancelled(src, u.pull_seq);
}

void P2PMatcher::take_pulled(int src, const MessageHeader& h, PulledFrom from) {
  const uint64_t seq = ++pulls_seen_[static_cast<size_t>(src)];
  Unexpected message{h, {}, h.nbytes, std::nullopt, {}, false, from, seq, {}};
  auto& posted = posted_[static_cast<size_t>(src)];
  auto it =
      std::find_if(posted.begin(), posted.end(), [&](const Recv& r) { return matches(h, r.req); });
  if (it != posted.end()) {
    Recv r = std::move(*it);
    posted.erase(it);
    deliver_pulled(message, r);
  } else {
    // Nobody asked yet: deferred (p2p.h), read within its grace either way.
    message.deferred = true;
    message.arrived = Clock::now();
    unexpected_[static_cast<size_t>(src)].push_back(std::move(message));
    deferred_count_.fetch_add(1, std::memory_order_relaxed);
  }
  acknowledge_pulls(src);
}

bool P2PMatcher::sending_to(int peer) const {
  return !sends_[static_cast<size_t>(peer)].empty() ||
         !awaiting_pull_[static_cast<size_t>(peer)].empty();
}

bool P2PMatcher::is_send_to(const Work& work, int peer) const {
  if (work.info().kind != OpKind::Send) return false;
  auto holds = [&](const PoolDeque<Send>& queue) {
    return std::any_of(queue.begin(), queue.end(),
                       [&](const Send& s) { return s.req.work.get() == &work; });
  };
  return holds(sends_[static_cast<size_t>(peer)]) ||
         holds(awaiting_pull_[static_cast<size_t>(peer)]);
}

bool P2PMatcher::is_receive_from(const Work& work, int peer) const {
  if (work.info().kind != OpKind::Recv) return false;
  const auto& posted = posted_[static_cast<size_t>(peer)];
  return std::any_of(posted.begin(), posted.end(),
                     [&](const Recv& r) { return r.req.work.get() == &work; });
}

std::chrono::nanoseconds P2PMatcher::grace_for(int src, Runner runner, uint64_t nbytes) const {
  // No longer than buffering the message would take (a copy, and the receive's
  // copy out of the buffer): if the receive comes later, the sender has waited
  // at most that much in vain.
  const auto buffering = std::chrono::nanoseconds(nbytes / kBufferingBytesPerNs);
  // No caller in a call: the owner may compute for long before it receives.
  if (!runner.is_caller()) return std::min<std::chrono::nanoseconds>(kPullGrace, buffering);
  // A caller blocked in a receive from `src` waits for a later message from it,
  // which may come only once this one is read.
  if (is_receive_from(*runner.waits_on, src))
    return std::min<std::chrono::nanoseconds>(kCrossingGrace, buffering);
  // A caller in another call receives once that call ends.
  if (!sending_to(src)) return std::min<std::chrono::nanoseconds>(kBusyCallerPullGrace, buffering);
  // A caller blocked in its send to `src` posts no receive before that send ends.
  if (is_send_to(*runner.waits_on, src)) return std::chrono::nanoseconds(0);
  return std::min<std::chrono::nanoseconds>(kCrossingGrace, buffering);
}

std::chrono::nanoseconds P2PMatcher::shortest_grace(Runner runner) const {
  std::chrono::nanoseconds shortest =
      runner.is_caller() ? std::chrono::nanoseconds(kBusyCallerPullGrace) : kPullGrace;
  for (int src = 0; src < world_.size(); ++src) {
    for (const Unexpected& u : unexpected_[static_cast<size_t>(src)]) {
      if (u.deferred) shortest = std::min(shortest, grace_for(src, runner, u.header.nbytes));
    }
  }
  return shortest;
}

void P2PMatcher::undefer(Unexpected& u) {
  if (!u.deferred) return;
  u.deferred = false;
  deferred_count_.fetch_sub(1, std::memory_order_relaxed);
}

void P2PMatcher::deliver_pulled(Unexpected& u, Recv& r) {
  undefer(u);
  const int src = r.req.src;
  std::exception_ptr error;
  if (u.header.nbytes != r.req.nbytes || u.header.dtype != static_cast<uint32_t>(r.req.dtype)) {
    error = size_mismatch(src, u.header, r.req);
  } else {
    try {
      read_pulled(src, u, 0, r.req.data, u.header.nbytes);
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(CommError(describe(r.req) + ": " + e.what()));
    }
  }
  complete(*r.req.work, error);
}

void P2PMatcher::buffer_pulled(int src, Unexpected& u) {
  undefer(u);
  // A message that cannot be read fails only the receive that claims it.
  try {
    const uint64_t n = u.header.nbytes;
    if (n > 0) {
      // A header is external input, and a size it merely claims (up to 1 TiB)
      // is not allocated before the message's last byte proved readable (an
      // arena message's whole range is checked against its chunk instead).
      // Then one read into a buffer of the whole size: reading in doubling
      // pieces into a growing buffer copied what was read once more (32 MiB:
      // 31 MiB of copies).
      if (!u.pulled_from.arena.present) {
        uint8_t last = 0;
        read_pulled(src, u, n - 1, &last, 1);
      }
      read_pulled(src, u, 0, u.data.extend(n, n), n);
    }
  } catch (const std::bad_alloc&) {
    u.data.release();
    u.error = "no memory to buffer an unexpected message of " + std::to_string(u.header.nbytes) +
              " bytes from rank " + std::to_string(src);
  } catch (const std::exception& e) {
    u.data.release();
    u.error = e.what();
  }
}

bool P2PMatcher::buffer_deferred_pulls(bool all, Runner runner) {
  const Clock::time_point now = Clock::now();
  bool moved = false;
  for (int src = 0; src < world_.size(); ++src) {
    bool read = false;
    for (Unexpected& u : unexpected_[static_cast<size_t>(src)]) {
      if (u.deferred && (all || now - u.arrived >= grace_for(src, runner, u.header.nbytes))) {
        buffer_pulled(src, u);
        read = true;
      }
    }
    if (read) acknowledge_pulls(src);
    moved |= read;
  }
  return moved;
}

void P2PMatcher::acknowledge_pulls(int src) {
  uint64_t done = pulls_seen_[static_cast<size_t>(src)];
  for (const Unexpected& u : unexpected_[static_cast<size_t>(src)]) {
    if (u.deferred) {
      done = u.pull_seq - 1;  // the list is in arrival order: the first is the oldest
      break;
    }
  }
  RingControl& ctl = world_.ring_control(src, world_.rank());
  if (done <= ctl.pulls_done.load(std::memory_order_relaxed)) return;  // we are its only writer
  ctl.pulls_done.store(done, std::memory_order_release);
  ring_(src, Ring::kBytes);
}

bool P2PMatcher::complete_pulled(int dst) {
  auto& waiting = awaiting_pull_[static_cast<size_t>(dst)];
  if (waiting.empty()) return false;
  // The receiver takes pulled messages in ring order, so one count says which.
  const uint64_t done =
      world_.ring_control(world_.rank(), dst).pulls_done.load(std::memory_order_acquire);
  bool moved = false;
  while (!waiting.empty() && waiting.front().pull_seq <= done) {
    WorkPtr work = std::move(waiting.front().req.work);
    waiting.pop_front();
    complete(*work, nullptr);
    moved = true;
  }
  return moved;
}

}  // namespace collie::detail
