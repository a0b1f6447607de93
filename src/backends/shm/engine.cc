#include "backends/shm/engine.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <thread>
#include <type_traits>

#include "backends/shm/liveness.h"
#include "backends/shm/step_op.h"
#include "collie/errors.h"
#include "runtime/coarse_clock.h"
#include "runtime/cpu_relax.h"
#include "runtime/futex.h"
#include "runtime/membarrier.h"
#include "runtime/op_info.h"

namespace collie::detail {
namespace {

using Clock = std::chrono::steady_clock;

// How often a blocked operation's peers are checked for liveness.
constexpr auto kLivenessInterval = std::chrono::milliseconds(50);
constexpr auto kStallCheckInterval = std::chrono::milliseconds(5);
// Longest sleep on the doorbell while operations are pending (they need their
// deadlines and peers checked); idle engines sleep longer.
constexpr int64_t kBusySleepNs = 20'000'000;
constexpr int64_t kIdleSleepNs = 500'000'000;
// Longest the progress thread stays parked (run()) without a ring: a safety net,
// since the last driver to leave wakes it when it leaves work behind
// (CallerDriving), and rings that need it wake it once nobody drives (Doorbell).
constexpr int64_t kParkNs = kBusySleepNs;
constexpr unsigned kPassesPerStallCheck = 32;
// How long a caller with a core of its own spins before it starts yielding the
// core now and then (drive()). A yield is a system call, and data that arrives
// during one is seen only when it returns: ~1.1 us on a Firecracker VM, where
// yielding every 32 polls from the start made a 32 KiB broadcast (its non-root
// waits ~2 us) take 4.2-5.6 us instead of 3.0-3.5. A yield only helps a peer
// that shares this core with another program's thread, which a wait this short
// does not suggest.
constexpr auto kYieldAfterSpinning = std::chrono::microseconds(20);
// How many times the progress thread yields, at most, for a caller waiting on the
// progress lock to take it (a woken caller on another CPU takes microseconds).
constexpr int kLetCallerInYields = 1000;

// Adds `delta` to a counter that only the holder of the progress lock writes
// (other threads only read it): a plain read and write will do, where a locked
// read-modify-write costs a small call about 5 ns.
template <typename T>
void add_as_only_writer(std::atomic<T>& counter, std::make_signed_t<T> delta) {
  counter.store(counter.load(std::memory_order_relaxed) + static_cast<T>(delta),
                std::memory_order_release);
}

}  // namespace

ShmEngine::ShmEngine(std::shared_ptr<ShmGroup> world)
    : world_(std::move(world)),
      peer_arenas_(world_->config().job_id),
      p2p_(
          *world_, peer_arenas_, [this](int r, Ring what) { ring(r, what); },
          [this](bool blocking) { finished_one(blocking); }),
      pending_async_(my_doorbell().async_pending) {
  // Spinning only pays when every rank has a core to itself; on an oversubscribed
  // machine it steals the time the peer needs to make progress.
  // COLLIE_SPIN_US overrides the choice (0 = always sleep at once).
  // Oversubscribed (more ranks than cores): poll briefly but yield on every poll,
  // which hands the core straight to a peer that is runnable; a futex sleep and
  // wake-up per step costs more.
  const bool oversubscribed = world_->config().oversubscribed;
  long spin_us = oversubscribed ? 50 : 200;
  yield_every_ = oversubscribed ? 1 : 32;
  yield_after_ = oversubscribed ? std::chrono::nanoseconds(0) : kYieldAfterSpinning;
  if (const char* v = std::getenv("COLLIE_SPIN_US"); v != nullptr && *v != '\0')
    spin_us = std::atol(v);
  spin_budget_ = std::chrono::microseconds(std::max(0L, spin_us));
  // Step rings without their barrier (Doorbell::ring_step) where ranks
  // outnumber cores: there they measured faster for every rank; with a core
  // each, slower for the rank that waits (its peer's data reached it later).
  if (oversubscribed && membarrier_ready(MembarrierScope::kMachine)) {
    unfenced_step_rings_ = true;
    my_doorbell().enable_unfenced_step_rings();
  }
  groups_.push_back(world_.get());
  thread_ = std::thread([this] { run(); });
}

ShmEngine::~ShmEngine() {
  stop_.store(true);
  my_doorbell().wake_all();
  if (thread_.joinable()) thread_.join();
}

Doorbell& ShmEngine::my_doorbell() const { return world_->header(world_->rank()).doorbell; }

void ShmEngine::ring(int world_rank, Ring what) const {
  // Rings reach idle progress threads (not kStep) so that they drain p2p rings
  // whose senders wait for space. This rank's own ring (a message to itself, or
  // room made in it) never needs that: its sender is this process, either a
  // caller that drives the engine itself or an asynchronous send, which keeps
  // the progress thread from idling. Waking the idle thread anyway cost each
  // send to oneself a futex wake-up and a context switch (1 rank, send_recv of
  // 8 B back to back: ~1 us).
  world_->header(world_rank).doorbell.ring(world_rank == world_->rank() ? Ring::kStep : what);
}

void ShmEngine::ring_peers(const ShmGroup& group) const {
  // Step flags matter only to threads with operations in flight, not to idle
  // progress threads (see Doorbell).
  for (int g = 0; g < group.size(); ++g) {
    if (g != group.rank())
      world_->header(group.world_rank(g)).doorbell.ring_step(unfenced_step_rings_);
  }
}

// Blocking operations are counted under the progress lock (they start in a
// locked first pass and finish in a pass); asynchronous ones are counted when
// posted, outside that lock.
void ShmEngine::submitted_one(bool blocking) {
  if (blocking) {
    add_as_only_writer(pending_blocking_, 1);
  } else {
    pending_async_.fetch_add(1, std::memory_order_seq_cst);  // before its ring: Doorbell
  }
}

void ShmEngine::finished_one(bool blocking) {
  if (blocking) {
    add_as_only_writer(pending_blocking_, -1);
  } else {
    pending_async_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

bool ShmEngine::has_pending() const {
  return pending_async_.load(std::memory_order_acquire) != 0 ||
         pending_blocking_.load(std::memory_order_acquire) != 0;
}

template <typename Item>
void ShmEngine::post_async(std::vector<Item>& box, Item item) {
  // The progress thread takes it from the inbox (woken by the doorbell if it
  // sleeps there).
  submitted_one(/*blocking=*/false);
  {
    std::lock_guard<std::mutex> lock(inbox_.mu);
    box.push_back(std::move(item));
    inbox_.filled.store(true, std::memory_order_release);
  }
  my_doorbell().ring(Ring::kBytes);
  // A progress thread parked while a caller drives is not woken by that ring
  // (Doorbell): a caller that waits for this drives it itself, and waking the
  // thread costs that caller a context switch (2 ranks, isend + irecv of 8 B
  // waited with wait_for: 0.9 -> 6 us). The last driver to leave wakes it if this
  // is still pending then (CallerDriving).
}

// While a caller runs passes itself, the progress thread parks (run()) instead
// of queueing on the progress lock. That matters most in a blocking
// call's first pass, which may copy a whole tensor under the lock (a pulled
// message read with CMA): a progress thread woken meanwhile by a peer's ring
// waited on the lock for the whole copy, had to be woken when it was released,
// and then took a turn on the caller's core (2 ranks, send_recv of 8 MiB written
// just before each call: two or three such wake-ups per call).
class ShmEngine::CallerDriving {
 public:
  explicit CallerDriving(ShmEngine& engine) : engine_(engine), bell_(engine.my_doorbell()) {
    bell_.drivers.fetch_add(1, std::memory_order_seq_cst);
  }
  ~CallerDriving() {
    if (bell_.drivers.fetch_sub(1, std::memory_order_seq_cst) == 1) engine_.last_driver_left();
  }
  CallerDriving(const CallerDriving&) = delete;
  CallerDriving& operator=(const CallerDriving&) = delete;

 private:
  ShmEngine& engine_;
  Doorbell& bell_;
};

void ShmEngine::last_driver_left() {
  Doorbell& bell = my_doorbell();
  // A thread that is not parked looks for work by itself (run()).
  if (bell.parked.load(std::memory_order_seq_cst) == 0) return;
  bell.drivers_left_ns.store(coarse_now_ns(), std::memory_order_relaxed);
  // The thread is needed at once only for asynchronous operations still in
  // flight: blocking operations are driven by their callers (batch_isend_irecv
  // waits for its transfers one after the other; waking the thread between them
  // costs two context switches per call). A pulled message nobody receives
  // meanwhile waits for the caller's next call or its waiting sender's next ring
  // (P2PMatcher::nudge_receivers).
  if (pending_async_.load(std::memory_order_seq_cst) != 0) bell.wake_all();
}

// A blocking call whose first pass may copy this many bytes counts as driving
// during it (CallerDriving): below, the two atomic updates would cost more than
// the rare wake-up they avoid.
constexpr uint64_t kDrivenFirstPassBytes = 64u << 10;

void ShmEngine::submit(ShmGroup* group, std::unique_ptr<OpState> op) {
  if (op->work()->info().blocking) return start_blocking(group, std::move(op));
  start_async(group, std::move(op));
}

template <typename Start>
bool ShmEngine::try_start_async(const Work& work, Start start, bool wake_thread) {
  // Its caller gives an asynchronous operation its first pass too, as a blocking
  // one's does (start_blocking), when the progress lock is free (else the inbox
  // takes it): a small call whose peers are ahead (the second rank of a pair)
  // completes right there, and the progress thread is woken only for one that
  // goes on. Handing every call to the thread cost a wake-up and a context switch
  // on a core a rank may need (2 ranks, all_reduce 8 B started asynchronously:
  // waited for at once 0.74 -> 0.68 us, blocking 0.34; with 1 us of other work
  // between calls 2.7 -> 2.1 us).
  std::unique_lock<FutexMutex> lock(progress_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  submitted_one(/*blocking=*/false);
  take_inbox();  // earlier operations first
  start();
  if (work.is_completed()) return true;
  lock.unlock();
  if (wake_thread) my_doorbell().ring(Ring::kBytes);  // the progress thread carries it on
  return true;
}

void ShmEngine::start_async(ShmGroup* group, std::unique_ptr<OpState> op) {
  const Work& work = *op->work();  // its caller holds it
  const bool started = try_start_async(work, [&] { queue_with_first_pass(group, std::move(op)); });
  if (!started) post_async(inbox_.collectives, std::make_pair(group, std::move(op)));
}

void ShmEngine::start_blocking(ShmGroup* group, std::unique_ptr<OpState> op) {
  // The caller drives a blocking operation itself (drive() comes next), so the
  // progress thread is not woken and the inbox is skipped: the operation goes
  // straight to its group's queue — behind whatever the inbox still holds, which
  // was issued earlier — and gets its first pass now. A small call publishes its
  // step before the caller even reaches drive().
  const OpInfo& info = op->work()->info();
  std::optional<CallerDriving> driving;
  if (info.count * element_size(info.dtype) >= kDrivenFirstPassBytes) driving.emplace(*this);
  std::lock_guard<FutexMutex> lock(progress_mu_);
  submitted_one(/*blocking=*/true);
  take_inbox();
  queue_with_first_pass(group, std::move(op));
}

void ShmEngine::queue_with_first_pass(ShmGroup* group, std::unique_ptr<OpState> op) {
  // With nothing queued ahead of it, the pass runs before the op is queued, and
  // an op it completes is finished without ever entering the queue: a small call
  // whose peers' steps are already published, as the later rank of a call finds
  // them. The queue entry, its clock reading and the queue's own pass cost such
  // a call ~100 of its ~2,000 instructions (2 ranks, 8 B).
  if (group->queue.empty() && group->failure.empty()) {
    Progress progress;
    try {
      progress = op->advance();
    } catch (...) {
      count_queued(*group, 1);
      enqueue(group, std::move(op), coarse_now());
      fail_group(*group, std::current_exception());  // as advance_group would
      return;
    }
    if (progress == Progress::Done) return finish(*op, nullptr);
    count_queued(*group, 1);
    enqueue(group, std::move(op), coarse_now());
    if (progress == Progress::Advanced) advance_group(*group);  // it may move on at once
    return;
  }
  count_queued(*group, 1);
  enqueue(group, std::move(op), coarse_now());
  advance_group(*group);
}

void ShmEngine::count_queued(ShmGroup& group, int delta) {
  add_as_only_writer(group.queue_size, delta);  // drain() only reads it
}

void ShmEngine::enqueue(ShmGroup* group, std::unique_ptr<OpState> op,
                        std::chrono::steady_clock::time_point now) {
  if (std::find(groups_.begin(), groups_.end(), group) == groups_.end()) groups_.push_back(group);
  op->last_progress = now;
  group->queue.push_back(std::move(op));
}

template <typename Start>
void ShmEngine::start_blocking_transfer(Start start, uint64_t bytes) {
  // As start_blocking: the caller drives it, so straight to the matcher (behind
  // earlier transfers still in the inbox, which keeps messages between a pair of
  // ranks in issue order) and a first step now: a small send is in the peer's
  // ring, a receive takes a message already there, before drive() begins. (A send
  // leaves incoming messages alone: a receive posted just after it is cheaper than
  // an unexpected-message buffer.)
  std::optional<CallerDriving> driving;
  if (bytes >= kDrivenFirstPassBytes) driving.emplace(*this);
  std::lock_guard<FutexMutex> lock(progress_mu_);
  submitted_one(/*blocking=*/true);
  take_inbox();
  start();
}

void ShmEngine::submit_send(const WorkPtr& work, SendRequest request) {
  const int dst = request.dst;
  auto start = [&] {
    if (p2p_.send_at_once(*work, request)) return;
    request.work = work;
    p2p_.add_send(std::move(request));
    p2p_.advance_sends(dst);
  };
  if (work->info().blocking) return start_blocking_transfer(start, request.nbytes);
  if (!try_start_async(*work, start)) {
    request.work = work;
    post_async(inbox_.sends, std::move(request));
  }
}

void ShmEngine::submit_recv(const WorkPtr& work, RecvRequest request) {
  const int src = request.src;
  auto start = [&] {
    if (p2p_.receive_at_once(*work, request)) return;
    request.work = work;
    p2p_.add_recv(std::move(request));
    p2p_.advance_incoming(src);
  };
  if (work->info().blocking) return start_blocking_transfer(start, request.nbytes);
  // An irecv still waiting after its first pass waits for bytes, and the peer
  // that writes them rings this rank's doorbell for everyone, idle progress
  // thread included: waking the thread now as well cost every irecv posted
  // before its message a futex wake-up, and a core to the woken thread (2 ranks,
  // 8 B from Python, irecv + isend + both waits back to back: 3.4 -> 2.3 us).
  // Deadlines and liveness do not depend on it: a waiter drives the engine
  // itself, and an idle thread looks at pending operations within kIdleSleepNs.
  if (!try_start_async(*work, start, /*wake_thread=*/false)) {
    request.work = work;
    post_async(inbox_.recvs, std::move(request));
  }
}

void ShmEngine::drain(ShmGroup* group) {
  // Every operation has a deadline enforced by the progress thread, so this ends.
  // Polling keeps the engine free of a second notification path; drains are rare.
  auto sleep = std::chrono::microseconds(50);
  for (;;) {
    bool busy;
    if (group == nullptr) {
      busy = has_pending();
    } else {
      std::lock_guard<std::mutex> lock(inbox_.mu);
      busy = std::any_of(inbox_.collectives.begin(), inbox_.collectives.end(),
                         [&](const auto& p) { return p.first == group; }) ||
             group->queue_size.load(std::memory_order_acquire) != 0;
    }
    if (!busy) return;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(5000));
  }
}

std::optional<OpInfo> ShmEngine::unchecked_call(const ShmGroup& group) {
  std::lock_guard<FutexMutex> lock(progress_mu_);
  if (group.unchecked_count == 0 || !group.failure.empty()) return std::nullopt;
  return unchecked_call_info(group);
}

void ShmEngine::detach(ShmGroup* group) {
  if (group == world_.get()) return;
  drain(group);
  uint64_t before;
  {
    std::lock_guard<std::mutex> lock(inbox_.mu);
    before = detached_generation_.load(std::memory_order_acquire);
    inbox_.detach.push_back(group);
    inbox_.filled.store(true, std::memory_order_release);
  }
  my_doorbell().wake_all();  // a parked thread too
  if (!thread_.joinable()) return;
  auto sleep = std::chrono::microseconds(20);
  while (detached_generation_.load(std::memory_order_acquire) == before) {
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(2000));
  }
}

void ShmEngine::shutdown() {
  drain(nullptr);
  {
    // Messages that arrived for receives never posted: read them, so their
    // senders complete (p2p.h), as if this rank had buffered them at once.
    std::lock_guard<FutexMutex> lock(progress_mu_);
    p2p_.buffer_deferred_pulls(/*all=*/true, P2PMatcher::Runner::progress_thread());
  }
  stop_.store(true);
  my_doorbell().wake_all();
  if (thread_.joinable()) thread_.join();
}

bool ShmEngine::take_inbox() {
  // Swapped with the inbox's vectors and emptied again below, so that both keep
  // their capacity: no allocation per operation once warm.
  auto& collectives = taken_.collectives;
  auto& sends = taken_.sends;
  auto& recvs = taken_.recvs;
  // Checked without the lock first: most passes find the inbox empty.
  if (!inbox_.filled.load(std::memory_order_acquire)) return false;
  {
    std::lock_guard<std::mutex> lock(inbox_.mu);
    inbox_.filled.store(false, std::memory_order_relaxed);
    if (!inbox_.detach.empty()) {
      for (ShmGroup* g : inbox_.detach) std::erase(groups_, g);
      inbox_.detach.clear();
      detached_generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    if (inbox_.collectives.empty() && inbox_.sends.empty() && inbox_.recvs.empty()) return false;
    collectives.swap(inbox_.collectives);
    sends.swap(inbox_.sends);
    recvs.swap(inbox_.recvs);
    // Count them as queued before the inbox lock is released, so drain() never
    // sees an operation in neither place.
    for (auto& [group, op] : collectives) count_queued(*group, 1);
  }
  auto now = coarse_now();
  for (auto& [group, op] : collectives) enqueue(group, std::move(op), now);
  for (auto& s : sends) p2p_.add_send(std::move(s));
  for (auto& r : recvs) p2p_.add_recv(std::move(r));
  collectives.clear();
  sends.clear();
  recvs.clear();
  return true;
}

void ShmEngine::finish(OpState& op, std::exception_ptr error) {
  const bool blocking = op.work()->info().blocking;
  if (error)
    op.work()->fail(error);
  else
    op.work()->complete();
  finished_one(blocking);
}

void ShmEngine::fail_group(ShmGroup& group, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    group.failure = e.what();
  }
  bool first = true;
  while (!group.queue.empty()) {
    std::unique_ptr<OpState> op = std::move(group.queue.front());
    group.queue.pop_front();
    count_queued(group, -1);
    if (first) {
      finish(*op, error);
      first = false;
    } else {
      finish(*op, std::make_exception_ptr(CommError(
                      op->work()->info().describe() +
                      ": the group is unusable after an earlier failure: " + group.failure)));
    }
  }
}

bool ShmEngine::advance_group(ShmGroup& group) {
  bool moved = false;
  while (!group.queue.empty()) {
    OpState& op = *group.queue.front();
    if (!group.failure.empty()) {
      fail_group(group, std::make_exception_ptr(CommError(
                            op.work()->info().describe() +
                            ": the group is unusable after an earlier failure: " + group.failure)));
      return true;
    }
    Progress p;
    try {
      p = op.advance();
    } catch (...) {
      fail_group(group, std::current_exception());
      return true;
    }
    if (p == Progress::Blocked) break;
    moved = true;
    if (p == Progress::Advanced) {
      op.last_progress = coarse_now();
      continue;
    }
    std::unique_ptr<OpState> done = std::move(group.queue.front());
    group.queue.pop_front();
    count_queued(group, -1);
    finish(*done, nullptr);
    if (!group.queue.empty()) group.queue.front()->last_progress = coarse_now();
  }
  return moved;
}

bool ShmEngine::pass(P2PMatcher::Runner runner) {
  bool moved = take_inbox();
  for (ShmGroup* g : groups_) moved |= advance_group(*g);
  moved |= p2p_.advance(runner);
  return moved;
}

void ShmEngine::check_stalls(Clock::time_point now) {
  // Deadlines are seconds long: looking every few milliseconds is plenty, and
  // keeps the spinning passes cheap.
  if (now - last_stall_check_ < kStallCheckInterval) return;
  last_stall_check_ = now;
  bool liveness_due = now - last_liveness_check_ >= kLivenessInterval;
  if (liveness_due) last_liveness_check_ = now;
  for (ShmGroup* g : groups_) {
    if (g->queue.empty()) continue;
    OpState& op = *g->queue.front();
    std::vector<int> waiting = op.blocked_on();
    if (waiting.empty()) continue;
    if (liveness_due) {
      std::vector<int> dead;
      for (int world_rank : waiting) {
        int grank = -1;
        for (int i = 0; i < g->size(); ++i) {
          if (g->world_rank(i) == world_rank) grank = i;
        }
        if (grank >= 0 && !process_alive(g->pid(grank))) dead.push_back(world_rank);
      }
      if (!dead.empty()) {
        // Look again at what the op waits for, now that the deaths are seen: a
        // peer that published what this op needed after `waiting` was read and
        // then exited is not in the way (the next pass takes its data).
        std::vector<int> still_waiting = op.blocked_on();
        std::erase_if(dead, [&](int r) {
          return std::find(still_waiting.begin(), still_waiting.end(), r) == still_waiting.end();
        });
      }
      if (!dead.empty() && !op.can_finish_without_peers()) {
        fail_group(*g, std::make_exception_ptr(
                           CommError(op.work()->info().describe() + ": rank(s) " + rank_list(dead) +
                                     " died (process exited) while this rank waited for them")));
        continue;
      }
    }
    double idle = std::chrono::duration<double>(now - op.last_progress).count();
    if (idle > g->timeout_seconds()) {
      fail_group(*g, std::make_exception_ptr(TimeoutError(
                         op.work()->info().describe() + ": timed out after " +
                         format_seconds(g->timeout_seconds()) + " waiting for rank(s) " +
                         rank_list(waiting) + " (alive but not calling this operation?)")));
    }
  }
  p2p_.check_stalls(now, liveness_due);
}

bool ShmEngine::locked_pass(bool check_stalls_now, P2PMatcher::Runner runner, bool* caller_waits) {
  std::lock_guard<FutexMutex> lock(progress_mu_);
  bool moved = pass(runner);
  if (caller_waits != nullptr) *caller_waits = progress_mu_.has_sleepers();
  // Deadlines are seconds long: the clock is read for them only every
  // kPassesPerStallCheck passes (a reading costs as much as an idle pass). Busy
  // passes count too: a rank still moving data with some peers must notice one
  // that died or stalled meanwhile (it used to only once everything else was
  // done, which took seconds for a large exchange on a loaded machine).
  if (check_stalls_now || ++passes_ % kPassesPerStallCheck == 0) {
    check_stalls(coarse_now());
  }
  return moved;
}

template <typename Done>
void ShmEngine::sleep_unless_progress(Done done, bool idle, P2PMatcher::Runner runner,
                                      int64_t timeout_ns) {
  Doorbell& bell = my_doorbell();
  const Doorbell::Ticket ticket = bell.prepare_wait(idle);
  {
    std::lock_guard<FutexMutex> lock(progress_mu_);
    // A deferred pulled message must be read within its grace even if nobody rings.
    if (p2p_.has_deferred()) {
      timeout_ns = std::min<int64_t>(timeout_ns, p2p_.shortest_grace(runner).count());
    }
    // A send waiting on its receiver rings it again now and then (p2p.h).
    if (p2p_.waits_on_receivers()) {
      p2p_.nudge_receivers();
      timeout_ns = std::min<int64_t>(
          timeout_ns,
          std::chrono::duration_cast<std::chrono::nanoseconds>(P2PMatcher::kNudgeInterval).count());
    }
  }
  // The pass after prepare_wait closes the race with a peer ringing just before.
  if (!locked_pass(/*check_stalls_now=*/true, runner) && !done()) bell.wait(ticket, timeout_ns);
  bell.finish_wait(idle);
}

void ShmEngine::drive(const Work& work, const Clock::time_point* deadline) {
  // Yield now and then once the wait is long (yield_after_; at once where ranks
  // outnumber cores): if another process shares this core (a loaded machine),
  // the peer we wait for may be the one waiting for the CPU.
  bool may_yield = yield_after_.count() == 0;
  auto relax = [this, &may_yield](unsigned spins) {
    if (may_yield && spins % yield_every_ == 0) {
      sched_yield();
    } else {
      cpu_relax();
    }
  };
  CallerDriving driving(*this);
  Clock::time_point spin_start;  // read when spinning starts
  unsigned spins = 0;  // idle passes since the last progress
  unsigned moved = 0;  // passes that made progress (the deadline is read every 16th)
  while (!work.is_completed()) {
    if (locked_pass(false, P2PMatcher::Runner::caller(work))) {
      spins = 0;
      if (deadline != nullptr && ++moved % 16 == 0 && Clock::now() >= *deadline) break;
      continue;
    }
    if (work.is_completed()) break;
    // The clock is read when spinning starts and then every 16th pass (once:
    // a small call's wait is often a few passes, and a read costs as much).
    if (spins++ % 16 != 0) {
      relax(spins);
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (spins == 1) spin_start = now;
    if (deadline != nullptr && now >= *deadline) break;
    may_yield = now - spin_start >= yield_after_;
    if (now - spin_start < spin_budget_) {
      relax(spins);
      continue;
    }
    int64_t sleep_ns = kBusySleepNs;
    if (deadline != nullptr) {
      sleep_ns = std::min<int64_t>(
          sleep_ns, std::chrono::duration_cast<std::chrono::nanoseconds>(*deadline - now).count());
    }
    sleep_unless_progress([&] { return work.is_completed(); }, /*idle=*/false,
                          P2PMatcher::Runner::caller(work), sleep_ns);
    spins = 0;
  }
}

void ShmEngine::run() {
  auto spin_start = Clock::now();
  Doorbell& bell = my_doorbell();
  for (;;) {
    if (bell.drivers.load(std::memory_order_seq_cst) != 0 && !stop_.load()) {
      // A waiting thread is progressing everything; stay out of its way (not even
      // queueing on the progress lock) until asynchronous work needs this thread
      // (Doorbell: a ring once no caller drives, or the last driver leaving it
      // behind). Waking up on a timer instead preempted the driver on its core
      // mid-call.
      const uint32_t seen = bell.prepare_park();
      if (bell.drivers.load(std::memory_order_seq_cst) != 0 && !stop_.load()) {
        bell.wait(seen, kParkNs);
      }
      bell.finish_park();
      continue;
    }
    bool caller_waits = false;
    const bool moved = locked_pass(false, P2PMatcher::Runner::progress_thread(), &caller_waits);
    // A caller that found the lock held sleeps on it. Locking again at once, pass
    // after pass while a peer keeps this thread busy, kept it out: a rank flooded
    // with small messages it had not received yet (2 ranks, `collie run
    // --bind-to none`) could not make its own 4-byte send for as long as the flood
    // lasted (5 s, the flood's bound; a liveness test failed in CI that way). Let
    // it in first.
    if (caller_waits) progress_mu_.let_a_sleeper_in(kLetCallerInYields);
    if (moved) {
      spin_start = Clock::now();
      continue;
    }
    // Blocking operations are their callers' to drive: with only those in flight
    // this thread sleeps as if idle (it still drains incoming p2p bytes).
    bool idle = pending_async_.load(std::memory_order_acquire) == 0;
    if (stop_.load() && !has_pending()) return;
    if (!idle && Clock::now() - spin_start < spin_budget_) {
      cpu_relax();
      continue;
    }
    sleep_unless_progress([] { return false; }, idle, P2PMatcher::Runner::progress_thread(),
                          idle ? kIdleSleepNs : kBusySleepNs);
    spin_start = Clock::now();
  }
}

}  // namespace collie::detail
