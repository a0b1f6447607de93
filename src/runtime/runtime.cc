// init/release, group management and rank queries (collie/runtime.h).
#include "collie/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "backends/transport.h"
#include "collie/errors.h"
#include "core/reduce_kernels.h"
#include "runtime/op_info.h"
#include "runtime/runtime_state.h"

namespace collie {
namespace detail {

namespace {

[[noreturn]] void throw_not_initialized(std::string_view what) {
  throw RuntimeError(std::string(what) +
                     ": collie has not been initialised. Call collie::init() first "
                     "(collie.init() in Python).");
}

// The group named `name`, or nullptr. Caller holds the state mutex.
std::shared_ptr<Group> find_locked(RuntimeState& s, std::string_view name) {
  if (is_world_name(name) || name == s.world_name) return s.world;
  auto it = s.groups.find(name);
  return it == s.groups.end() ? nullptr : it->second;
}

// `prefix` + `what` name the caller in messages ("For " + "all_reduce"); the
// message is built only on failure.
std::shared_ptr<Group> require_group(std::string_view name, std::string_view what,
                                     std::string_view prefix = {}) {
  RuntimeState& s = runtime_state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) throw_not_initialized(std::string(prefix) + std::string(what));
  auto g = find_locked(s, name);
  if (!g)
    throw RuntimeError(std::string(prefix) + std::string(what) + ": the group " +
                       std::string(name) + " does not exist.");
  return g;
}

// Node index of a world rank: launchers place ranks on nodes in contiguous blocks.
int node_of(const LaunchEnv& env, int world_rank) { return world_rank / env.local_world_size; }

}  // namespace

RuntimeState& runtime_state() {
  static RuntimeState* state = new RuntimeState();  // never destroyed: outlives static teardown
  return *state;
}

namespace {
// The world group's constant names (collie/runtime.h): every one names the world.
constexpr std::string_view kWorldNames[] = {WORLD, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP,
                                            MCCL_WORLD_COMM_GROUP};
}  // namespace

bool is_world_name(std::string_view name) {
  return std::find(std::begin(kWorldNames), std::end(kWorldNames), name) != std::end(kWorldNames);
}

namespace {
// The group `group` for `op`, a member of it: what lookup_for_op's cache holds.
std::shared_ptr<Group> require_member_group(std::string_view group, std::string_view op) {
  auto g = require_group(group, op, "For ");
  if (!g->is_member()) {
    throw RuntimeError("For " + std::string(op) + ", this rank (" +
                       std::to_string(runtime_state().env.rank) + ") is not a member of group '" +
                       g->name() + "' " + rank_list(g->world_ranks()));
  }
  return g;
}
}  // namespace

Group* lookup_for_op(std::string_view group, std::string_view op) {
  // Every call looks its group up: the group this thread found last is reused
  // (no lock, no map search, and no reference counted, which cost two atomic
  // read-modify-writes a call) while no group was created or destroyed since. The cache holds it
  // strongly, so a group destroyed meanwhile stays a closed shell (Group::close) until this thread
  // looks a group up again, and the caller's pointer stays valid.
  struct Last {
    uint64_t generation = 0;  // 0: nothing cached (generations start at 1)
    std::string name;
    // The name was one of the world's constant names, viewed here: the same view
    // again is the same name, found without comparing characters (a memcmp per
    // call). Any other view, even of equal text, is compared.
    std::string_view constant;
    std::shared_ptr<Group> group;
  };
  thread_local Last last;
  const uint64_t generation = runtime_state().generation.load(std::memory_order_acquire);
  if (generation == last.generation &&
      ((!last.constant.empty() && group.data() == last.constant.data() &&
        group.size() == last.constant.size()) ||
       group == last.name)) {
    return last.group.get();
  }
  auto g = require_member_group(group, op);
  last.generation = generation;
  last.name.assign(group);
  last.constant = {};
  for (std::string_view world : kWorldNames) {
    if (group.data() == world.data() && group.size() == world.size()) last.constant = world;
  }
  last.group = std::move(g);
  return last.group.get();
}

std::shared_ptr<Group> lookup_shared_for_op(std::string_view group, std::string_view op) {
  return require_member_group(group, op);
}

int to_group_rank(const Group& group, int world_rank, std::string_view op, std::string_view what) {
  int r = group.group_rank_of(world_rank);
  if (r < 0) {
    throw RuntimeError("For " + std::string(op) + ", " + std::string(what) + " " +
                       std::to_string(world_rank) + " is not a member of group '" + group.name() +
                       "' " + rank_list(group.world_ranks()) + " (ranks are world ranks)");
  }
  return r;
}

}  // namespace detail

using detail::runtime_state;
using detail::RuntimeState;

const char* version() { return COLLIE_VERSION; }

void init(std::string_view backend_name) {
  RuntimeState& s = runtime_state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.initialized) return;
  // A bad COLLIE_REDUCE_KERNELS fails here, not in a reduction.
  detail::reduce_kernels_in_use();
  detail::LaunchEnv env = detail::read_launch_env();
  if (env.source.rfind("none", 0) == 0) {
    // A world of one: scope its segments by pid so independent programs never collide.
    env.job_id = "single" + std::to_string(getpid());
  }
  const std::string requested(backend_name);
  detail::TransportChoice choice = detail::select_transport(requested, env);
  double timeout = detail::default_timeout_seconds();
  std::unique_ptr<detail::Transport> transport = detail::make_transport(choice, env);
  std::unique_ptr<detail::Backend> world_backend = transport->create_world(timeout);

  std::vector<int> ranks(static_cast<size_t>(env.world_size));
  for (int i = 0; i < env.world_size; ++i) ranks[static_cast<size_t>(i)] = i;
  s.world_name = (requested == "hccl" || requested == "nccl" || requested == "mccl")
                     ? requested + "_world_group"
                     : std::string(WORLD);
  s.world = std::make_shared<detail::Group>(s.world_name, ranks, env.rank, timeout,
                                            std::move(world_backend));
  s.transport = std::move(transport);
  s.env = env;
  s.backend = choice.name;
  s.backend_reason = choice.reason;
  s.timeout_seconds = timeout;
  s.signal_dump = std::make_unique<detail::SignalDump>([] {
    RuntimeState& st = runtime_state();
    std::lock_guard<std::mutex> l(st.mu);
    if (!st.initialized) return;
    st.world->recorder().report();
    for (auto& [name, g] : st.groups) g->recorder().report();
  });
  s.initialized = true;
  s.generation.fetch_add(1, std::memory_order_release);
}

void release() {
  RuntimeState& s = runtime_state();
  std::unique_ptr<detail::SignalDump> signal_dump;  // stopped after the lock is released
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return;
  signal_dump = std::move(s.signal_dump);
  // A group's drain can report a mismatched last call (Backend::drain); the
  // runtime is released all the same and the first such error raised after.
  std::exception_ptr first_error;
  auto drain = [&](detail::Group& g) {
    try {
      g.drain();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  };
  // Closed explicitly (Group::close), since threads' lookup caches may hold them.
  for (auto& [name, g] : s.groups) {
    drain(*g);
    g->close();
  }
  s.groups.clear();
  drain(*s.world);
  s.world->close();
  s.world.reset();
  s.transport->shutdown();
  s.transport.reset();
  s.initialized = false;
  s.generation.fetch_add(1, std::memory_order_release);
  s.world_name.clear();
  s.backend.clear();
  if (first_error) std::rethrow_exception(first_error);
}

bool is_initialized() { return runtime_state().initialized.load(std::memory_order_acquire); }

std::string world_group_name() {
  RuntimeState& s = runtime_state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.initialized ? s.world_name : std::string(WORLD);
}

std::string backend_name() {
  RuntimeState& s = runtime_state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.backend;
}

namespace {

int env_int_or(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names) {
    if (const char* v = std::getenv(n); v != nullptr && *v != '\0') return std::atoi(v);
  }
  return fallback;
}

std::shared_ptr<detail::Group> member_group(std::string_view group, const char* what) {
  auto g = detail::require_group(group, what);
  if (!g->is_member()) {
    throw RuntimeError(std::string(what) + ": Group " + g->name() + " doesn't include this rank " +
                       std::to_string(runtime_state().env.rank) + " process.");
  }
  return g;
}

}  // namespace

int get_rank(std::string_view group) {
  if (!is_initialized()) return env_int_or({"COLLIE_RANK", "RANK_ID", "RANK"}, 0);
  return member_group(group, "get_rank")->rank();
}

int get_group_size(std::string_view group) {
  if (!is_initialized()) return env_int_or({"COLLIE_WORLD_SIZE", "RANK_SIZE", "WORLD_SIZE"}, 1);
  return detail::require_group(group, "get_group_size")->size();
}

int get_local_rank(std::string_view group) {
  if (!is_initialized()) return env_int_or({"COLLIE_LOCAL_RANK", "LOCAL_RANK"}, 0);
  auto g = member_group(group, "get_local_rank");
  const detail::LaunchEnv& env = runtime_state().env;
  int mine = detail::node_of(env, env.rank), local = 0;
  for (int i = 0; i < g->rank(); ++i) {
    if (detail::node_of(env, g->world_ranks()[static_cast<size_t>(i)]) == mine) ++local;
  }
  return local;
}

int get_local_rank_size(std::string_view group) {
  if (!is_initialized())
    return env_int_or({"COLLIE_LOCAL_WORLD_SIZE", "LOCAL_RANK_SIZE", "LOCAL_WORLD_SIZE"}, 1);
  auto g = detail::require_group(group, "get_local_rank_size");
  const detail::LaunchEnv& env = runtime_state().env;
  int mine = detail::node_of(env, env.rank);
  return static_cast<int>(std::count_if(g->world_ranks().begin(), g->world_ranks().end(),
                                        [&](int w) { return detail::node_of(env, w) == mine; }));
}

int get_world_rank_from_group_rank(std::string_view group, int group_rank_id) {
  auto g = detail::require_group(group, "get_world_rank_from_group_rank");
  if (group_rank_id < 0 || group_rank_id >= g->size()) {
    throw RuntimeError("Group " + g->name() + " doesn't contain the group rank " +
                       std::to_string(group_rank_id));
  }
  return g->world_ranks()[static_cast<size_t>(group_rank_id)];
}

int get_group_rank_from_world_rank(int world_rank_id, std::string_view group) {
  auto g = detail::require_group(group, "get_group_rank_from_world_rank");
  int r = g->group_rank_of(world_rank_id);
  if (r < 0) {
    throw RuntimeError("Group " + g->name() + " doesn't contain the global rank " +
                       std::to_string(world_rank_id));
  }
  return r;
}

std::vector<int> get_process_group_ranks(std::string_view group) {
  return detail::require_group(group, "get_process_group_ranks")->world_ranks();
}

void create_group(std::string_view group, const std::vector<int>& rank_ids,
                  const GroupOptions& options) {
  RuntimeState& s = runtime_state();
  std::unique_lock<std::mutex> lock(s.mu);
  if (!s.initialized) detail::throw_not_initialized("create_group");
  const std::string name(group);
  if (name.empty()) throw ValueError("For 'create_group', the group name must not be empty");
  if (detail::is_world_name(name) || name == s.world_name) {
    throw ValueError("For 'create_group', '" + name + "' is the name of the world group");
  }
  if (auto it = s.groups.find(name); it != s.groups.end()) {
    if (it->second->world_ranks() == rank_ids) return;  // same group again: a no-op
    throw ValueError("For 'create_group', the group " + name +
                     " has been created, the rank_list is " +
                     detail::rank_list(it->second->world_ranks()) +
                     ", but current rank_list for the group is " + detail::rank_list(rank_ids));
  }
  if (rank_ids.empty()) {
    throw ValueError(
        "For 'create_group', the argument 'rank_ids' size should be greater than 0, "
        "but got 'rank_ids' size : 0.");
  }
  if (std::set<int>(rank_ids.begin(), rank_ids.end()).size() != rank_ids.size()) {
    throw ValueError("For 'create_group', list rank_ids in Group " + name +
                     " has duplicate data! " + detail::rank_list(rank_ids));
  }
  for (int r : rank_ids) {
    if (r < 0 || r >= s.env.world_size) {
      throw ValueError("For 'create_group', rank " + std::to_string(r) + " in " +
                       detail::rank_list(rank_ids) + " is outside the world of " +
                       std::to_string(s.env.world_size) + " ranks");
    }
  }
  double timeout = options.timeout_seconds > 0 ? options.timeout_seconds : s.timeout_seconds;
  uint64_t incarnation = s.incarnations[name]++;
  auto it = std::find(rank_ids.begin(), rank_ids.end(), s.env.rank);
  std::unique_ptr<detail::Backend> backend;
  if (it != rank_ids.end()) {
    detail::GroupSpec spec;
    spec.name = name;
    spec.world_ranks = rank_ids;
    spec.my_group_rank = static_cast<int>(it - rank_ids.begin());
    spec.incarnation = incarnation;
    spec.timeout_seconds = timeout;
    detail::Transport* transport = s.transport.get();
    // The rendezvous blocks (with the group's deadline): do it without the lock so
    // other threads' operations on existing groups proceed meanwhile.
    lock.unlock();
    backend = transport->create_group(spec);
    lock.lock();
  }
  s.groups[name] =
      std::make_shared<detail::Group>(name, rank_ids, s.env.rank, timeout, std::move(backend));
  s.generation.fetch_add(1, std::memory_order_release);
}

void destroy_group(std::string_view group) {
  RuntimeState& s = runtime_state();
  std::shared_ptr<detail::Group> g;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.initialized) detail::throw_not_initialized("destroy_group");
    if (detail::is_world_name(group) || group == s.world_name) {
      throw ValueError("For 'destroy_group', the world_group does not support destruction.");
    }
    auto it = s.groups.find(group);
    if (it == s.groups.end()) {
      throw ValueError("For 'destroy_group', the group " + std::string(group) + " does not exist.");
    }
    g = std::move(it->second);
    s.groups.erase(it);
    s.generation.fetch_add(1, std::memory_order_release);
  }
  // Closed even if the drain reports an error: a thread's lookup cache may hold
  // the Group a while longer, but not its segment or its place in the engine.
  try {
    g->drain();
  } catch (...) {
    g->close();
    throw;
  }
  g->close();
}

}  // namespace collie
