#include "backends/mpi/engine.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "backends/mpi/datatypes.h"
#include "backends/mpi/mpi_call.h"
#include "collie/errors.h"
#include "runtime/cpu_relax.h"
#include "runtime/env.h"
#include "runtime/op_info.h"

namespace collie::detail {
namespace {

using Clock = std::chrono::steady_clock;

// After any progress the thread keeps polling (yielding the core between polls)
// for a while: the next step of a collective usually follows within microseconds.
// Longer when the caller is blocked on the operation, since then latency is all
// that matters to it.
constexpr auto kHotWindow = std::chrono::milliseconds(1);
constexpr auto kHotWindowBlocking = std::chrono::milliseconds(10);
// Then it sleeps between polls, backing off up to kMaxSleep: the machines run
// more ranks than cores, and a spinning poller steals the time peers need.
constexpr auto kMinSleep = std::chrono::microseconds(20);
constexpr auto kMaxSleep = std::chrono::microseconds(250);
// A driving caller polls without a system call for this long after progress,
// then yields the core between polls.
constexpr auto kDriverYieldAfter = std::chrono::microseconds(20);
// How often abandoned (timed-out) requests are polled when nothing else runs.
constexpr auto kZombiePoll = std::chrono::milliseconds(10);
// At exit, how long timed-out requests may take to complete before MPI_Finalize
// is skipped (finalising with them pending could hang).
constexpr auto kFinalizeGrace = std::chrono::seconds(2);

std::atomic<MpiEngine*> g_engine{nullptr};

Clock::duration seconds(double s) {
  // Capped (and NaN-safe) so that "no deadline" values cannot overflow the clock.
  if (!(s < 1e9)) s = 1e9;
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

[[noreturn]] void throw_request_error(const Task& t, int code) {
  int cls = code;
  MPI_Error_class(code, &cls);
  if (cls == MPI_ERR_TRUNCATE) {
    throw CommError(t.describe() +
                    ": the peer sent more data than this operation expects "
                    "(shapes and dtypes of both sides must match)");
  }
  throw CommError(t.describe() + ": MPI reported: " + mpi_error_string(code));
}

// Whether this node runs more ranks than it has CPUs, as far as the launcher's
// variables tell (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, ...; unknown: no).
// There a caller polling for its own operation would take the CPU a peer rank
// needs: 4 ranks on 2 cores, back-to-back all_to_all_single of 64 B-32 KiB took
// 1.2-1.7x as long with callers driving (Open MPI 4.1.4).
bool oversubscribed() {
  try {
    return more_ranks_than_cpus(read_launch_env().local_world_size);
  } catch (const std::exception&) {
    return false;  // malformed variables are init()'s to report
  }
}

}  // namespace

MpiEngine& MpiEngine::get() {
  static MpiEngine* engine = [] {
    auto* e = new MpiEngine();  // never destroyed: the atexit handler stops its thread
    if (!e->init_error_) {
      g_engine.store(e);
      std::atexit(&MpiEngine::at_exit);
    }
    return e;
  }();
  if (engine->init_error_) std::rethrow_exception(engine->init_error_);
  return *engine;
}

MpiEngine::MpiEngine() {
  std::future<void> started = started_.get_future();
  thread_ = std::thread([this] { run(); });
  try {
    started.get();
  } catch (...) {
    init_error_ = std::current_exception();
    thread_.join();
  }
}

void MpiEngine::init_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
      throw CommError("init: MPI_Init_thread failed (error " + std::to_string(rc) + ")");
    we_initialized_mpi_ = true;
    // FUNNELED is enough for this thread alone; SERIALIZED lets blocked callers drive.
    can_drive_ = provided >= MPI_THREAD_SERIALIZED && !oversubscribed();
    if (provided < MPI_THREAD_FUNNELED) {
      throw CommError(
          "init: the MPI library provides only MPI_THREAD_SINGLE; collie's mpi backend "
          "needs MPI_THREAD_FUNNELED (it calls MPI from a progress thread)");
    }
  } else {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) throw RuntimeError("init: MPI has already been finalised in this process");
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      throw RuntimeError(
          "init: the program initialised MPI with a thread level below MPI_THREAD_SERIALIZED; "
          "collie calls MPI from its own progress thread. Call MPI_Init_thread with "
          "MPI_THREAD_MULTIPLE (or SERIALIZED, and make no MPI calls while collie operations "
          "run), or let collie initialise MPI");
    }
    can_drive_ = !oversubscribed();
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  void* value = nullptr;
  int flag = 0;
  if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag) == MPI_SUCCESS && flag) {
    tag_ub_ = *static_cast<int*>(value);
  }
  init_mpi_types();
}

void MpiEngine::finalize_mpi() {
  auto until = Clock::now() + kFinalizeGrace;
  while (!zombies_.empty() && Clock::now() < until) {
    poll_zombies();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!we_initialized_mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (!zombies_.empty()) {
    // MPI_Finalize waits for pending communication; with an operation a peer never
    // joined that is forever. mpirun then reports this process as not finalised.
    std::fprintf(stderr,
                 "collie: not calling MPI_Finalize: %zu operation(s) that timed out are still "
                 "pending in MPI\n",
                 zombies_.size());
    return;
  }
  free_mpi_types();
  MPI_Finalize();
}

void MpiEngine::at_exit() {
  if (MpiEngine* e = g_engine.load()) e->stop_and_join();
}

void MpiEngine::stop_and_join() {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    stop_ = true;
  }
  inbox_cv_.notify_all();
  // Operations still running end by their deadlines. A thread stuck inside a
  // blocking MPI call (group creation whose members vanished) is left behind.
  auto limit = seconds(longest_timeout_.load() + 10);
  if (exited_.get_future().wait_for(limit) == std::future_status::ready) {
    thread_.join();
  } else {
    std::fprintf(stderr,
                 "collie: the MPI progress thread did not stop; exiting without MPI_Finalize\n");
    thread_.detach();
  }
}

void MpiEngine::push(Item item, bool wake) {
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.push_back(std::move(item));
    idle = idle_waiting_;
  }
  if (wake || idle) inbox_cv_.notify_all();
}

void MpiEngine::offer_driving(Task& task) {
  if (can_drive_ && task.work()) task.work()->set_driver(self_);
}

bool MpiEngine::pass(Clock::time_point now) {
  bool moved = take_inbox(now);
  moved |= advance(now);
  check_deadlines(now);
  moved |= poll_zombies();
  return moved;
}

void MpiEngine::drive(const Work& work, const Clock::time_point* deadline) {
  drivers_.fetch_add(1, std::memory_order_seq_cst);
  Clock::time_point last_activity = Clock::now();
  while (!work.is_completed()) {
    // One clock read a pass: a pass is a few MPI_Tests, so the time it was taken
    // at serves the deadline and idle checks after it as well.
    const Clock::time_point now = Clock::now();
    bool moved = false;
    {
      std::lock_guard<std::mutex> lock(progress_mu_);
      if (finalized_) break;
      moved = pass(now);
    }
    if (work.is_completed()) break;
    if (deadline != nullptr && now >= *deadline) break;
    if (moved) {
      last_activity = now;
      continue;
    }
    if (now - last_activity >= kHotWindowBlocking) break;
    if (now - last_activity >= kDriverYieldAfter) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
  bool in_flight = true;
  {
    std::lock_guard<std::mutex> lock(progress_mu_);
    in_flight = has_live_tasks() || !zombies_.empty();
  }
  // (Operations pushed from now on wake the progress thread themselves.)
  if (drivers_.fetch_sub(1, std::memory_order_seq_cst) == 1 && in_flight) {
    // The progress thread takes over whatever is still in flight, even where it
    // went to sleep with nothing to do (this caller took the operation from the
    // inbox first): the hand-off wakes it.
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      handoff_ = true;
    }
    inbox_cv_.notify_all();
  }
}

void MpiEngine::attach(std::shared_ptr<MpiGroup> group) {
  double t = group->timeout_seconds;
  double prev = longest_timeout_.load();
  while (t > prev && !longest_timeout_.compare_exchange_weak(prev, t)) {
  }
  Item item(Item::Kind::Attach);
  item.group = std::move(group);
  push(std::move(item));
}

void MpiEngine::submit_collective(const std::shared_ptr<MpiGroup>& group,
                                  std::unique_ptr<Task> task) {
  group->add_outstanding();
  offer_driving(*task);
  const bool wake = !(can_drive_ && task->blocking());
  Item item(Item::Kind::Collective);
  item.group = group;
  item.task = std::move(task);
  push(std::move(item), wake);
}

void MpiEngine::submit_p2p(const std::shared_ptr<MpiGroup>& group, std::unique_ptr<Task> task,
                           int peer, bool is_send) {
  group->add_outstanding();
  offer_driving(*task);
  const bool wake = !(can_drive_ && task->blocking());
  Item item(Item::Kind::P2P);
  item.group = group;
  item.task = std::move(task);
  item.peer = peer;
  item.is_send = is_send;
  push(std::move(item), wake);
}

std::future<void> MpiEngine::submit_control(std::unique_ptr<Task> task, double timeout_seconds) {
  std::future<void> f = task->future();
  Item item(Item::Kind::Control);
  item.task = std::move(task);
  item.timeout_seconds = timeout_seconds;
  push(std::move(item));
  return f;
}

void MpiEngine::detach(std::shared_ptr<MpiGroup> group) {
  Item item(Item::Kind::Detach);
  item.group = std::move(group);
  push(std::move(item));
}

void MpiEngine::free_comm(MPI_Comm comm) {
  Item item(Item::Kind::FreeComm);
  item.comm = comm;
  push(std::move(item));
}

void MpiEngine::sync() {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  Item item(Item::Kind::Sync);
  item.done = done;
  push(std::move(item));
  f.get();
}

bool MpiEngine::take_inbox(Clock::time_point now) {
  std::vector<Item> items;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    items.swap(inbox_);
  }
  for (Item& item : items) accept(item, now);
  return !items.empty();
}

void MpiEngine::accept(Item& item, Clock::time_point now) {
  switch (item.kind) {
    case Item::Kind::Attach:
      groups_.push_back(std::move(item.group));
      return;
    case Item::Kind::Collective: {
      MpiGroup& g = *item.group;
      if (!g.failure.empty()) {
        finish(*item.task, std::make_exception_ptr(CommError(
                               item.task->describe() +
                               ": the group is unusable after an earlier failure: " + g.failure)));
        g.finished_one();
        return;
      }
      g.queue.push_back(std::move(item.task));
      return;
    }
    case Item::Kind::P2P: {
      P2P p{std::move(item.group), std::move(item.task), item.peer, item.is_send};
      if (p.is_send && p.group->broken_send_peers.count(p.peer) != 0) {
        finish(*p.task, std::make_exception_ptr(CommError(
                            p.task->describe() +
                            ": an earlier send to this peer timed out and may "
                            "still be delivered, so later sends could be matched out of order")));
        p.group->finished_one();
        return;
      }
      p2p_.push_back(std::move(p));
      P2P& q = p2p_.back();
      try {
        if (step(*q.task, q.group->timeout_seconds, now) == Step::Done) {
          finish(*q.task, nullptr);
          q.group->finished_one();
          p2p_.pop_back();
        }
      } catch (...) {
        fail_p2p(q, std::current_exception(), false);
        p2p_.pop_back();
      }
      return;
    }
    case Item::Kind::Control: {
      Task& t = *item.task;
      control_.push_back(std::move(item.task));
      try {
        if (step(t, item.timeout_seconds, now) == Step::Done) {
          finish(t, nullptr);
          control_.pop_back();
        }
      } catch (...) {
        finish(t, std::current_exception());
        bury(std::move(control_.back()));
        control_.pop_back();
      }
      return;
    }
    case Item::Kind::Detach: {
      MpiGroup* g = item.group.get();
      if (!g->queue.empty()) {
        fail_group(*g, std::make_exception_ptr(CommError("group '" + g->name + "' was destroyed")));
      }
      std::erase_if(groups_, [&](const std::shared_ptr<MpiGroup>& p) { return p.get() == g; });
      // Freeing is allowed with requests still pending (zombies): MPI defers it.
      if (g->comm != MPI_COMM_NULL) MPI_Comm_free(&g->comm);
      return;
    }
    case Item::Kind::FreeComm:
      if (item.comm != MPI_COMM_NULL) MPI_Comm_free(&item.comm);
      return;
    case Item::Kind::Sync:
      item.done->set_value();
      return;
  }
}

MpiEngine::Step MpiEngine::step(Task& task, double timeout_seconds, Clock::time_point now) {
  bool moved = false;
  if (!task.started) {
    task.started = true;
    task.timeout_seconds = timeout_seconds;
    task.deadline = now + seconds(timeout_seconds);
    if (task.run_phases()) return Step::Done;
    moved = true;
  }
  while (poll(task)) {
    moved = true;
    if (task.run_phases()) return Step::Done;
  }
  return moved ? Step::Moved : Step::Idle;
}

bool MpiEngine::poll(Task& task) {
  std::vector<MPI_Request>& reqs = task.requests();
  if (task.all_requests_done()) return true;
  std::vector<MPI_Status>& out = task.statuses_mut();
  if (reqs.size() == 1) {
    int flag = 0;
    MPI_Status st;
    int rc = MPI_Test(&reqs[0], &flag, &st);
    if (rc != MPI_SUCCESS) throw_request_error(task, rc);
    if (flag) out[0] = st;
    return flag != 0;
  }
  const int n = static_cast<int>(reqs.size());
  std::vector<int> index(reqs.size());
  std::vector<MPI_Status> st(reqs.size());
  int count = 0;
  int rc = MPI_Testsome(n, reqs.data(), &count, index.data(), st.data());
  if (rc == MPI_ERR_IN_STATUS) {
    for (int k = 0; k < count; ++k) {
      if (st[static_cast<size_t>(k)].MPI_ERROR != MPI_SUCCESS) {
        throw_request_error(task, st[static_cast<size_t>(k)].MPI_ERROR);
      }
    }
  } else if (rc != MPI_SUCCESS) {
    throw_request_error(task, rc);
  }
  if (count == MPI_UNDEFINED) return true;
  for (int k = 0; k < count; ++k)
    out[static_cast<size_t>(index[static_cast<size_t>(k)])] = st[static_cast<size_t>(k)];
  return task.all_requests_done();
}

void MpiEngine::finish(Task& task, std::exception_ptr error) { task.finish(std::move(error)); }

void MpiEngine::bury(std::unique_ptr<Task> task) {
  if (!task->all_requests_done()) zombies_.push_back(std::move(task));
}

bool MpiEngine::poll_zombies() {
  bool moved = false;
  for (auto it = zombies_.begin(); it != zombies_.end();) {
    bool done = false;
    try {
      done = poll(**it);
    } catch (...) {
      done = true;  // finished with an error nobody waits for any more
    }
    if (done) {
      it = zombies_.erase(it);
      moved = true;
    } else {
      ++it;
    }
  }
  return moved;
}

void MpiEngine::fail_group(MpiGroup& g, std::exception_ptr error) {
  if (g.failure.empty()) g.failure = what_of(error);
  bool first = true;
  while (!g.queue.empty()) {
    std::unique_ptr<Task> t = std::move(g.queue.front());
    g.queue.pop_front();
    if (first && t->started) {
      finish(*t, error);
    } else {
      finish(*t, std::make_exception_ptr(
                     CommError(t->describe() +
                               ": the group is unusable after an earlier failure: " + g.failure)));
    }
    first = false;
    g.finished_one();
    bury(std::move(t));
  }
}

void MpiEngine::fail_p2p(P2P& p, std::exception_ptr error, bool cancel) {
  if (cancel) {
    // A receive that never matched can be cancelled: the buffer is then free
    // and a later message goes to a later receive. Sends cannot be recalled.
    for (MPI_Request& r : p.task->requests()) {
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
    }
  }
  finish(*p.task, std::move(error));
  p.group->finished_one();
  bury(std::move(p.task));
}

bool MpiEngine::advance_group(MpiGroup& g, Clock::time_point now) {
  bool moved = false;
  while (!g.queue.empty()) {
    Task& t = *g.queue.front();
    Step s;
    try {
      s = step(t, g.timeout_seconds, now);
    } catch (...) {
      if (t.keeps_group_usable && t.all_requests_done()) {
        finish(t, std::current_exception());
        g.queue.pop_front();
        g.finished_one();
        moved = true;
        continue;
      }
      fail_group(g, std::current_exception());
      return true;
    }
    if (s == Step::Idle) break;
    moved = true;
    if (s == Step::Moved) break;  // requests in flight
    finish(t, nullptr);
    g.queue.pop_front();
    g.finished_one();
  }
  return moved;
}

bool MpiEngine::advance(Clock::time_point now) {
  bool moved = false;
  for (size_t i = 0; i < groups_.size(); ++i) moved |= advance_group(*groups_[i], now);
  for (auto it = p2p_.begin(); it != p2p_.end();) {
    Step s = Step::Idle;
    try {
      s = step(*it->task, it->group->timeout_seconds, now);
    } catch (...) {
      fail_p2p(*it, std::current_exception(), false);
      it = p2p_.erase(it);
      moved = true;
      continue;
    }
    if (s == Step::Done) {
      finish(*it->task, nullptr);
      it->group->finished_one();
      it = p2p_.erase(it);
      moved = true;
      continue;
    }
    moved |= s == Step::Moved;
    ++it;
  }
  for (auto it = control_.begin(); it != control_.end();) {
    Step s = Step::Idle;
    try {
      s = step(**it, (*it)->timeout_seconds, now);
    } catch (...) {
      finish(**it, std::current_exception());
      bury(std::move(*it));
      it = control_.erase(it);
      moved = true;
      continue;
    }
    if (s == Step::Done) {
      finish(**it, nullptr);
      it = control_.erase(it);
      moved = true;
      continue;
    }
    moved |= s == Step::Moved;
    ++it;
  }
  return moved;
}

void MpiEngine::check_deadlines(Clock::time_point now) {
  for (auto& gp : groups_) {
    MpiGroup& g = *gp;
    if (g.queue.empty() || !g.queue.front()->started || now < g.queue.front()->deadline) continue;
    Task& t = *g.queue.front();
    fail_group(g, std::make_exception_ptr(TimeoutError(
                      t.describe() + ": timed out after " + format_seconds(t.timeout_seconds) +
                      " waiting for the other members of group '" + g.name + "' " +
                      rank_list(g.world_ranks) +
                      " (world ranks). MPI cannot tell which rank is missing: check that every "
                      "member calls this operation, in the same order")));
  }
  for (auto it = p2p_.begin(); it != p2p_.end();) {
    if (now < it->task->deadline) {
      ++it;
      continue;
    }
    const int world_peer = it->group->world_ranks[static_cast<size_t>(it->peer)];
    std::string msg = it->task->describe() + ": ";
    if (it->is_send) {
      msg += "rank " + std::to_string(world_peer) + " did not receive within " +
             format_seconds(it->task->timeout_seconds) + " (is it calling recv?)";
      it->group->broken_send_peers.insert(it->peer);
    } else {
      msg += "no message from rank " + std::to_string(world_peer) + " within " +
             format_seconds(it->task->timeout_seconds) +
             " (is it calling send with the same group and tag?)";
    }
    fail_p2p(*it, std::make_exception_ptr(TimeoutError(msg)), !it->is_send);
    it = p2p_.erase(it);
  }
  for (auto it = control_.begin(); it != control_.end();) {
    Task& t = **it;
    if (now < t.deadline) {
      ++it;
      continue;
    }
    std::string waiting = t.waiting_for ? t.waiting_for() : std::string();
    finish(t, std::make_exception_ptr(TimeoutError(
                  t.describe() + ": timed out after " + format_seconds(t.timeout_seconds) +
                  (waiting.empty() ? std::string() : " " + waiting))));
    for (MPI_Request& r : t.requests()) {
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);  // only receives are cancelled by Open MPI
    }
    bury(std::move(*it));
    it = control_.erase(it);
  }
}

bool MpiEngine::has_live_tasks() const {
  if (!p2p_.empty() || !control_.empty()) return true;
  return std::any_of(groups_.begin(), groups_.end(),
                     [](const auto& g) { return !g->queue.empty(); });
}

bool MpiEngine::any_blocking() const {
  for (const auto& g : groups_) {
    if (!g->queue.empty() && g->queue.front()->blocking()) return true;
  }
  return std::any_of(p2p_.begin(), p2p_.end(), [](const P2P& p) { return p.task->blocking(); });
}

void MpiEngine::run() {
  try {
    init_mpi();
  } catch (...) {
    started_.set_exception(std::current_exception());
    exited_.set_value();
    return;
  }
  started_.set_value();

  auto sleep = std::chrono::duration_cast<Clock::duration>(kMinSleep);
  Clock::time_point last_activity = Clock::now();
  for (;;) {
    {
      // A driving caller makes the passes: stay out of its way (not even
      // queueing on progress_mu_) until it leaves, then poll as after progress.
      std::unique_lock<std::mutex> lock(inbox_mu_);
      if (!stop_ && drivers_.load(std::memory_order_seq_cst) != 0) {
        inbox_cv_.wait_for(lock, kMaxSleep,
                           [&] { return stop_ || drivers_.load(std::memory_order_seq_cst) == 0; });
        last_activity = Clock::now();
        sleep = kMinSleep;
        continue;
      }
    }
    Clock::time_point now = Clock::now();
    bool moved = false, live = false, blocking = false, zombies = false;
    {
      std::lock_guard<std::mutex> lock(progress_mu_);
      moved = pass(now);
      live = has_live_tasks();
      blocking = any_blocking();
      zombies = !zombies_.empty();
    }
    if (moved) {
      last_activity = now;
      sleep = kMinSleep;
      continue;
    }
    std::unique_lock<std::mutex> lock(inbox_mu_);
    if (!inbox_.empty() || handoff_) {
      handoff_ = false;
      continue;
    }
    if (stop_ && !live) break;
    auto wake = [&] { return !inbox_.empty() || stop_ || handoff_; };
    if (!live) {
      if (!zombies) {
        idle_waiting_ = true;  // so that every push wakes it (push)
        inbox_cv_.wait(lock, wake);
        idle_waiting_ = false;
      } else {
        inbox_cv_.wait_for(lock, kZombiePoll, wake);
      }
      continue;
    }
    if (now - last_activity < (blocking ? kHotWindowBlocking : kHotWindow)) {
      lock.unlock();
      std::this_thread::yield();
      continue;
    }
    inbox_cv_.wait_for(lock, sleep, wake);
    sleep = std::min<Clock::duration>(sleep * 2, kMaxSleep);
  }
  std::lock_guard<std::mutex> progress(progress_mu_);
  finalized_ = true;
  finalize_mpi();
  exited_.set_value();
}

}  // namespace collie::detail
