// ShmEngine: the per-process progress engine of the shared-memory backend.
//
// One thread advances every queued operation of every group (the head of each
// group's queue, so a group's operations complete in issue order) and every
// point-to-point transfer. It never blocks on a peer: when a pass over all
// operations makes no progress it sleeps on this process's doorbell, which peers
// ring whenever they publish something. Each operation has a deadline measured
// from its last progress; a blocked operation's peers are checked for liveness a
// few times a second. A failed collective marks its group failed: the queued and
// later operations of that group fail at once (its step counters can no longer be
// trusted), other groups carry on.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/shm/arena.h"
#include "backends/shm/op_state.h"
#include "backends/shm/p2p.h"
#include "backends/shm/shm_group.h"
#include "runtime/futex_mutex.h"

namespace collie::detail {

class ShmEngine final : public ProgressDriver {
 public:
  // `world` must be the world group (with p2p rings); the engine keeps it.
  explicit ShmEngine(std::shared_ptr<ShmGroup> world);
  ~ShmEngine();  // stops the thread; call shutdown() first to let operations finish
  ShmEngine(const ShmEngine&) = delete;
  ShmEngine& operator=(const ShmEngine&) = delete;

  ShmGroup& world() const { return *world_; }

  // Queues a collective on `group` (which must stay alive until drained).
  void submit(ShmGroup* group, std::unique_ptr<OpState> op);
  // Starts a point-to-point transfer of `work` (which the caller holds until it
  // ends). The request gets its own reference to the Work only if it waits in a
  // queue: a transfer done on the spot costs no reference count updates.
  void submit_send(const WorkPtr& work, SendRequest request);
  void submit_recv(const WorkPtr& work, RecvRequest request);

  // Progresses everything from the calling thread until `work` completes (or
  // `deadline` passes): the waiting thread does the work itself (no hand-off to
  // the progress thread and back), spinning briefly when every rank has a core,
  // then sleeping on the doorbell. The progress thread stands aside while any
  // thread drives.
  void drive(const Work& work,
             const std::chrono::steady_clock::time_point* deadline = nullptr) override;

  // Blocks until `group` (nullptr: everything, p2p included) has no queued operations.
  void drain(ShmGroup* group);
  // The group's last call if it was an eager rooted one whose peers' calls this
  // rank has not compared yet (step_op.h), unless the group failed.
  std::optional<OpInfo> unchecked_call(const ShmGroup& group);
  // Drains `group`, then makes the engine forget it (before the group is destroyed).
  // The world group is never detached.
  void detach(ShmGroup* group);
  // Waits for all operations, then stops the progress thread.
  void shutdown();

  // Peers' shared-arena chunks; only for operations being advanced (the progress
  // lock is held).
  PeerArenas& peer_arenas() { return peer_arenas_; }

  // Rings the doorbell of a world rank (after publishing something it may wait for).
  void ring(int world_rank, Ring what) const;
  // Rings every member of `group` except this rank.
  void ring_peers(const ShmGroup& group) const;

 private:
  struct Inbox {
    std::mutex mu;
    std::vector<std::pair<ShmGroup*, std::unique_ptr<OpState>>> collectives;
    std::vector<SendRequest> sends;
    std::vector<RecvRequest> recvs;
    std::vector<ShmGroup*> detach;
    std::atomic<bool> filled{false};  // something was added since the last take
  };

  std::shared_ptr<ShmGroup> world_;
  PeerArenas peer_arenas_;  // before p2p_, which reads from it
  P2PMatcher p2p_;
  Inbox inbox_;
  Inbox taken_;  // what the last pass took from inbox_ (progress lock held)
  std::vector<ShmGroup*> groups_;  // progress thread only
  // The words callers and the progress thread share each start a cache line
  // (pending counts, the progress lock), away from what only one side
  // writes. Packed together, a member added before them (the p2p matcher's
  // sent_head_) shifted them and cost a small collective after a barrier 5-8 %
  // (2 ranks, all_reduce 8 B 0.37 -> 0.40 us; 0.38 with these lines).
  //
  // Operations submitted and not yet finished: those no caller drives (async),
  // and blocking ones (written only under progress_mu_: submitted_one()).
  // (Kept in the doorbell, where peers' rings read it while the thread is parked.)
  std::atomic<uint64_t>& pending_async_;
  std::atomic<uint64_t> pending_blocking_{0};
  std::atomic<uint64_t> detached_generation_{0};  // bumped after each detach request is handled
  std::atomic<bool> stop_{false};
  // Held for every pass, by whichever thread runs it. (Biased to the caller, a
  // BiasedMutex, it measured slower: docs/performance_history.md.)
  alignas(64) FutexMutex progress_mu_;
  // More ranks than cores, and this process registered for machine-wide
  // membarriers: its kStep rings to peers that accept them skip their barrier
  // (Doorbell::ring_step).
  bool unfenced_step_rings_ = false;
  alignas(64) std::chrono::nanoseconds spin_budget_{0};
  unsigned yield_every_ = 32;                // polls between sched_yield() while spinning...
  std::chrono::nanoseconds yield_after_{0};  // ...once a caller has spun this long (drive())
  std::chrono::steady_clock::time_point last_liveness_check_;
  std::chrono::steady_clock::time_point last_stall_check_;
  unsigned passes_ = 0;  // under progress_mu_
  std::thread thread_;

  void run();
  void submitted_one(bool blocking);  // blocking: progress lock held
  void finished_one(bool blocking);   // progress lock held
  bool has_pending() const;
  bool pass(P2PMatcher::Runner runner);
  // `caller_waits`: set to whether another thread was waiting for the lock.
  bool locked_pass(bool check_stalls_now, P2PMatcher::Runner runner, bool* caller_waits = nullptr);
  // Sleeps on the doorbell unless a last pass moves something or `done()` holds.
  template <typename Done>
  void sleep_unless_progress(Done done, bool idle, P2PMatcher::Runner runner, int64_t timeout_ns);
  bool take_inbox();
  void count_queued(ShmGroup& group, int delta);  // progress lock held
  void start_blocking(ShmGroup* group, std::unique_ptr<OpState> op);
  void start_async(ShmGroup* group, std::unique_ptr<OpState> op);
  // Runs an asynchronous operation's first pass (`start`) in its caller when the
  // progress lock is free; false (nothing done) when it is not.
  template <typename Start>
  // wake_thread: whether an operation still in flight after its first pass needs
  // the progress thread woken (not when a peer's ring will wake it: see
  // submit_recv).
  bool try_start_async(const Work& work, Start start, bool wake_thread = true);
  template <typename Start>
  void start_blocking_transfer(Start start, uint64_t bytes);
  // Counts the calling thread among the doorbell's drivers while it lives
  // (drive(), and the first pass of a large blocking call); the progress thread
  // stays parked while there are any.
  class CallerDriving;
  // The last driver left: wakes the parked progress thread if work is left for it.
  void last_driver_left();
  template <typename Item>
  void post_async(std::vector<Item>& box, Item item);
  // Queues `op` on `group` and gives it its first pass (progress lock held).
  void queue_with_first_pass(ShmGroup* group, std::unique_ptr<OpState> op);
  // Appends to the group's queue (progress lock held; queue_size already counted).
  void enqueue(ShmGroup* group, std::unique_ptr<OpState> op,
               std::chrono::steady_clock::time_point now);
  bool advance_group(ShmGroup& group);
  void check_stalls(std::chrono::steady_clock::time_point now);
  void fail_group(ShmGroup& group, std::exception_ptr error);
  void finish(OpState& op, std::exception_ptr error);
  Doorbell& my_doorbell() const;
};

}  // namespace collie::detail
