// MpiEngine: the process's single MPI progress thread.
//
// Every MPI call collie makes happens on this thread (MPI_Init_thread included), so
// MPI's thread levels never matter: collie asks for MPI_THREAD_SERIALIZED and only
// needs FUNNELED. The thread starts nonblocking MPI operations and polls them with
// MPI_Test, which is also what drives MPI's progress, so `async_op=True` overlaps
// the caller's work. Per group, collectives start one at a time in issue order (a
// multi-phase operation must not interleave its MPI calls with the next one's, or
// ranks could match them differently); point-to-point operations start as soon as
// they are submitted, so batches of isend/irecv never deadlock.
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

namespace collie::detail {

class MpiEngine {
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
  void push(Item item);
  void run();
  void init_mpi();
  void finalize_mpi();
  static void at_exit();
  void stop_and_join();

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
  std::atomic<double> longest_timeout_{0};

  // Progress thread only.
  std::vector<std::shared_ptr<MpiGroup>> groups_;
  std::list<P2P> p2p_;
  std::list<std::unique_ptr<Task>> control_;
  std::list<std::unique_ptr<Task>> zombies_;

  std::thread thread_;
  std::promise<void> started_;
  std::promise<void> exited_;
};

}  // namespace collie::detail
