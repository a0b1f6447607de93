// collie/runtime.h — starting collie, the world, groups and rank queries.
//
// init() joins this process to the job described by its environment (see
// docs/env.md: COLLIE_* set by `collie run`, else RANK/WORLD_SIZE, else
// OMPI_/PMI_/SLURM_ variables; with none, a world of one). Groups are subsets of
// the world's ranks, named by strings. A group's ranks are kept in the order
// given to create_group: group rank i is rank_ids[i]. That one map is used by
// every operation and every query (MindSpore keeps a second, sorted map for
// send/recv; collie does not).
//
// The world group answers to collie::WORLD ("collie_world_group") and to
// MindSpore's names "hccl_world_group", "nccl_world_group", "mccl_world_group".
//
// Example:
//   collie::init();
//   int r = collie::get_rank(), n = collie::get_group_size();
//   collie::create_group("pair", {3, 1});          // on ranks 3 and 1 (both call it)
//   collie::get_group_rank_from_world_rank(3, "pair");   // 0
//   collie::release();
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace collie {

inline constexpr std::string_view WORLD = "collie_world_group";
inline constexpr std::string_view HCCL_WORLD_COMM_GROUP = "hccl_world_group";
inline constexpr std::string_view NCCL_WORLD_COMM_GROUP = "nccl_world_group";
inline constexpr std::string_view MCCL_WORLD_COMM_GROUP = "mccl_world_group";

// Version string, e.g. "0.1.0".
const char* version();

// Joins the job. backend_name: "" (choose from the environment), "shm", or one of
// MindSpore's names "hccl", "nccl", "mccl" (accepted; they run on the default
// backend and make "<name>_world_group" the reported world name). Calling init()
// again after success is a no-op. Errors: ValueError (unknown backend, bad
// environment), CommError/TimeoutError (peers did not join within the deadline).
void init(std::string_view backend_name = "");

// Leaves the job: waits for queued operations, destroys every group, unmaps all
// shared memory. init() may be called again afterwards. If a group's last call
// was a rooted one that returned before seeing every rank's call (comm.h: the
// root of a staged broadcast or scatter, a non-root of a staged reduce or
// gather, a non-root of a direct broadcast, scatter or gather), it first waits
// for the other ranks to reach that call (the group's deadline) and raises
// CommError if their calls differ (TimeoutError if they never come); the job is
// released either way.
void release();

// Whether init() has completed (and release() has not). Never blocks: while
// another thread is inside init() it is false, inside release() still true.
bool is_initialized();

// The name init() gave the world (WORLD, or "<backend>_world_group" for MindSpore names).
std::string world_group_name();
// The backend in use ("shm"), or "" before init().
std::string backend_name();

// Rank of this process in `group`. Before init(): COLLIE_RANK/RANK_ID/RANK from the
// environment, else 0 (as MindSpore). Errors: RuntimeError if this rank is not in `group`
// or the group does not exist.
int get_rank(std::string_view group = WORLD);
// Number of ranks in `group`. Before init(): COLLIE_WORLD_SIZE/RANK_SIZE/WORLD_SIZE, else 1.
int get_group_size(std::string_view group = WORLD);
// Rank among the members of `group` that run on this host.
int get_local_rank(std::string_view group = WORLD);
// Number of members of `group` on this host.
int get_local_rank_size(std::string_view group = WORLD);

// World rank of group rank `group_rank_id`. RuntimeError if out of range.
int get_world_rank_from_group_rank(std::string_view group, int group_rank_id);
// Group rank of world rank `world_rank_id`. RuntimeError if not a member.
int get_group_rank_from_world_rank(int world_rank_id, std::string_view group);
// World ranks of `group` in creation order.
std::vector<int> get_process_group_ranks(std::string_view group = WORLD);

// Options of create_group.
struct GroupOptions {
  // Deadline in seconds for every wait of this group's operations; <= 0 means the
  // default (COLLIE_TIMEOUT, else 300 s).
  double timeout_seconds = 0;
};

// Creates a group of the given world ranks (group rank i = rank_ids[i]). Collective
// over the members: every listed rank must call it. Other ranks need not; if they
// do (as torch's new_group requires), the group is only recorded there: queries
// such as get_process_group_ranks work, operations raise RuntimeError.
// The same name with the same ranks again is a no-op. Errors (ValueError): empty
// name, a world name, empty list, duplicates, a rank outside the world, the same
// name with different ranks.
void create_group(std::string_view group, const std::vector<int>& rank_ids,
                  const GroupOptions& options = {});
// Destroys a group (not collective). ValueError for the world; ValueError if unknown.
// Like release(), it first checks a rooted last call the other ranks had
// not reached (CommError/TimeoutError); the group is destroyed either way. A call
// on the group that another thread makes meanwhile fails with a RuntimeError
// ("does not exist", or "the group was destroyed" if it had already found it).
void destroy_group(std::string_view group);

}  // namespace collie
