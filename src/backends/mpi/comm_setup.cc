#include "backends/mpi/comm_setup.h"

#include <algorithm>

#include "backends/mpi/mpi_call.h"
#include "collie/errors.h"
#include "runtime/op_info.h"

namespace collie::detail {
namespace {

// FNV-1a: the same on every rank, whatever the platform.
uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

uint64_t hash_name(const std::string& name, uint64_t incarnation) {
  uint64_t h = fnv1a(0xcbf29ce484222325ULL, name.data(), name.size());
  return fnv1a(h, &incarnation, sizeof incarnation);
}

}  // namespace

std::unique_ptr<Task> make_world_setup(std::shared_ptr<CommResult> result) {
  auto t = std::make_unique<Task>(std::string("init: setting up the MPI communicators"));
  t->then([result](Task& task) {
    check_mpi(MPI_Comm_idup(MPI_COMM_WORLD, &result->comm, task.post()), "MPI_Comm_idup",
              task.describe());
    check_mpi(MPI_Comm_idup(MPI_COMM_WORLD, &result->control, task.post()), "MPI_Comm_idup",
              task.describe());
  });
  t->then([result](Task& task) {
    // Errors come back as codes (and become exceptions) instead of aborting the job.
    check_mpi(MPI_Comm_set_errhandler(result->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
              task.describe());
    check_mpi(MPI_Comm_set_errhandler(result->control, MPI_ERRORS_RETURN),
              "MPI_Comm_set_errhandler", task.describe());
  });
  return t;
}

std::unique_ptr<Task> make_group_setup(MPI_Comm control, const std::string& name,
                                       const std::vector<int>& world_ranks, int me,
                                       uint64_t incarnation, int tag_ub,
                                       std::shared_ptr<CommResult> result) {
  auto t = std::make_unique<Task>("create_group '" + name + "' " + rank_list(world_ranks));
  // The tag only depends on what every member agrees on before it has seen the
  // others (the name); the payload carries the rank list to compare.
  const int tag = static_cast<int>(hash_name(name, incarnation) % static_cast<uint64_t>(tag_ub));
  struct Rendezvous {
    uint64_t mine = 0;
    std::vector<uint64_t> theirs;
    std::vector<int> peers;  // world ranks of the other members, in group order
    size_t first_recv = 0;   // index of the first receive among the task's requests
  };
  auto rv = std::make_shared<Rendezvous>();
  rv->mine =
      fnv1a(hash_name(name, incarnation), world_ranks.data(), world_ranks.size() * sizeof(int));
  for (int r : world_ranks) {
    if (r != me) rv->peers.push_back(r);
  }
  rv->theirs.assign(rv->peers.size(), 0);
  Task* self = t.get();
  t->waiting_for = [self, rv] {
    std::vector<int> missing;
    for (size_t i = 0; i < rv->peers.size(); ++i) {
      const auto& reqs = self->requests();
      size_t k = rv->first_recv + i;
      if (k < reqs.size() && reqs[k] != MPI_REQUEST_NULL) missing.push_back(rv->peers[i]);
    }
    if (missing.empty()) return std::string();
    return "waiting for rank(s) " + rank_list(missing) + " to call create_group with the same name";
  };
  t->then([=](Task& task) {
    for (int peer : rv->peers) {
      check_mpi(MPI_Isend(&rv->mine, 1, MPI_UINT64_T, peer, tag, control, task.post()), "MPI_Isend",
                task.describe());
    }
    rv->first_recv = rv->peers.size();
    for (size_t i = 0; i < rv->peers.size(); ++i) {
      check_mpi(MPI_Irecv(&rv->theirs[i], 1, MPI_UINT64_T, rv->peers[i], tag, control, task.post()),
                "MPI_Irecv", task.describe());
    }
  });
  t->then([=](Task& task) {
    for (size_t i = 0; i < rv->peers.size(); ++i) {
      if (rv->theirs[i] != rv->mine) {
        throw ValueError(task.describe() + ": rank " + std::to_string(rv->peers[i]) +
                         " created group '" + name +
                         "' with a different rank list (every member must pass the same ranks in "
                         "the same order)");
      }
    }
    // Every member has arrived, so this blocking call returns promptly.
    MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    check_mpi(MPI_Comm_group(control, &world_group), "MPI_Comm_group", task.describe());
    int rc = MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(),
                            &group);
    MPI_Group_free(&world_group);
    check_mpi(rc, "MPI_Group_incl", task.describe());
    rc = MPI_Comm_create_group(control, group, tag, &result->comm);
    MPI_Group_free(&group);
    check_mpi(rc, "MPI_Comm_create_group", task.describe());
    check_mpi(MPI_Comm_set_errhandler(result->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
              task.describe());
  });
  return t;
}

}  // namespace collie::detail
