// MpiEngine: the process's single MPI progress thread.
//
// MPI_Init_thread and MPI_Finalize happen on this thread, and so does every other
// MPI call collie makes unless a blocked caller drives (below): collie asks for
// MPI_THREAD_SERIALIZED and only needs FUNNELED. The thread starts nonblocking MPI operations and
// polls them with MPI_Test, which is also what drives MPI's progress, so `async_op=True` overlaps
// the caller's work. Per group, collectives start one at a time in issue order (a
// multi-phase operation must not interleave its MPI calls with the next one's, or
// ranks could match them differently); point-to-point operations start as soon as
// they are submitted, so batches of isend/irecv never deadlock.
//
// A caller blocked on an operation (Work::wait) drives the engine itself where
// MPI's thread level allows it (MPI_THREAD_SERIALIZED or more) and the node runs
// no more ranks than CPUs: it makes the passes the progress thread would make,
// under the same lock, while the progress thread stays parked, so that a small
// call does not pay a hand-off to the progress thread and a wake-up back (two
// context switches: 2 ranks, all_to_all_single of 64 B 14.3 -> 3.0-5.1 us).
// After 10 ms without progress it hands what is in flight back and sleeps.
//
// MPI has no deadlines. The engine gives each operation one: `timeout_seconds`
// after it started, it fails with TimeoutError naming the op and its sequence
// number. A timed-out collective leaves its communicator unusable (MPI cannot
// cancel it), so the group is marked failed and its later operations fail with
// CommError; the abandoned request stays with the engine (a "zombie", keeping its
// buffers alive) until MPI completes it. A timed-out receive is cancelled.
//
// The engine lives until the process exits: collie::release() frees communicators
// but keeps MPI initialised (MPI cannot be initialised twice), and an atexit
// handler stops the thread and calls MPI_Finalize if collie called MPI_Init.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/mpi/mpi_group.h"
#include "backends/mpi/task.h"
#include "runtime/work.h"

namespace collie::detail {

class MpiEngine final : public ProgressDriver {
 public:
  // The process's engine, started on first use (MPI is initialised on the progress
  // thread). Throws the initialisation error, now and on every later call.
  static MpiEngine& get();

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int tag_ub() const { return tag_ub_; }

  // Makes the engine advance `group`'s queue. Before its first operation.
  void attach(std::shared_ptr<MpiGroup> group);
  // Queues a collective: started after the group's earlier collectives finished.
  void submit_collective(const std::shared_ptr<MpiGroup>& group, std::unique_ptr<Task> task);
  // Starts a point-to-point operation with group rank `peer` at once.
  void submit_p2p(const std::shared_ptr<MpiGroup>& group, std::unique_ptr<Task> task, int peer,
                  bool is_send);
  // Starts an engine-internal task (communicator setup) with its own timeout;
  // the returned future is fulfilled when it finishes.
  std::future<void> submit_control(std::unique_ptr<Task> task, double timeout_seconds);
  // Forgets `group` and frees its communicator. Call after the group drained.
  void detach(std::shared_ptr<MpiGroup> group);
  // Frees a communicator on the progress thread.
  void free_comm(MPI_Comm comm);
  // Returns once the engine has handled everything submitted before this call.
  void sync();

  // ProgressDriver: passes over everything in flight until `work` completes,
  // `deadline` passes, or 10 ms pass without progress.
  void drive(const Work& work,
             const std::chrono::steady_clock::time_point* deadline = nullptr) override;

 private:
  struct Item {
    enum class Kind { Attach, Collective, P2P, Control, Detach, FreeComm, Sync };
    explicit Item(Kind k) : kind(k) {}
    Kind kind;
    std::shared_ptr<MpiGroup> group;
    std::unique_ptr<Task> task;
    int peer = -1;
    bool is_send = false;
    double timeout_seconds = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    std::shared_ptr<std::promise<void>> done;
  };
  struct P2P {
    std::shared_ptr<MpiGroup> group;
    std::unique_ptr<Task> task;
    int peer;
    bool is_send;
  };
  using Clock = std::chrono::steady_clock;

  MpiEngine();
  // Queues `item` and wakes the progress thread unless `wake` is false (a
  // blocking operation whose caller is about to drive) and it does not sleep
  // without a timeout.
  void push(Item item, bool wake = true);
  void run();
  void init_mpi();
  void finalize_mpi();
  static void at_exit();
  void stop_and_join();

  // One pass over the inbox, the groups' queues, point-to-point operations,
  // deadlines and zombies. Under progress_mu_; true when anything moved.
  bool pass(Clock::time_point now);
  // Lets a blocking `task`'s caller drive it (before it is submitted).
  void offer_driving(Task& task);
  bool take_inbox(Clock::time_point now);
  void accept(Item& item, Clock::time_point now);
  bool advance(Clock::time_point now);
  bool advance_group(MpiGroup& group, Clock::time_point now);
  void check_deadlines(Clock::time_point now);
  bool poll_zombies();
  bool has_live_tasks() const;
  bool any_blocking() const;

  // Starts or continues a task. Done: finished without error; throws on failure.
  enum class Step { Idle, Moved, Done };
  Step step(Task& task, double timeout_seconds, Clock::time_point now);
  bool poll(Task& task);
  void finish(Task& task, std::exception_ptr error);
  void bury(std::unique_ptr<Task> task);  // keeps a task with live requests as a zombie
  void fail_group(MpiGroup& group, std::exception_ptr error);
  void fail_p2p(P2P& p, std::exception_ptr error, bool cancel);

  // Set by the progress thread before the constructor returns.
  std::exception_ptr init_error_;
  bool we_initialized_mpi_ = false;
  int world_rank_ = 0;
  int world_size_ = 1;
  int tag_ub_ = 32767;

  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<Item> inbox_;
  bool stop_ = false;
  bool idle_waiting_ = false;  // the progress thread waits with no timeout
  bool handoff_ = false;       // a driving caller left: the progress thread polls on
  std::atomic<double> longest_timeout_{0};

  // Held for every pass, by the progress thread or a driving caller, and so
  // around every MPI call after MPI_Init_thread (serialising them).
  std::mutex progress_mu_;
  bool can_drive_ = false;       // set by init_mpi: callers may drive
  bool finalized_ = false;       // under progress_mu_: no pass may call MPI any more
  std::atomic<int> drivers_{0};  // callers driving now
  // The engine as Work::set_driver takes it (never destroyed: a no-op deleter).
  std::shared_ptr<MpiEngine> self_{this, [](MpiEngine*) {}};

  // Under progress_mu_.
  std::vector<std::shared_ptr<MpiGroup>> groups_;
  std::list<P2P> p2p_;
  std::list<std::unique_ptr<Task>> control_;
  std::list<std::unique_ptr<Task>> zombies_;

  std::thread thread_;
  std::promise<void> started_;
  std::promise<void> exited_;
};

}  // namespace collie::detail
