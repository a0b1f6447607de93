// shm_sweep.h — removes the shared memory a finished job left behind.
//
// The naming contract with the library (docs/launcher.md): every POSIX shared-memory
// object of a job is named "collie-<uid>-<jobid>-<rest>" (uid = getuid() in decimal;
// job ids are [A-Za-z0-9_], so the '-' after the job id ends it unambiguously).
// Under /dev/shm such an object is the file "collie-<uid>-<jobid>-<rest>"; a POSIX
// named semaphore is "sem.collie-<uid>-<jobid>-<rest>". After all ranks of a job have
// exited, `collie run` unlinks exactly these names (and the bare "collie-<uid>-<jobid>"),
// never those of another job or another user.
//
// Example:
//   auto removed = sweep_job_shm(getuid(), "1f3ax9c04be12");   // names removed
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace collie::cli {

// "collie-<uid>-<job_id>": the prefix of every shared-memory name of the job.
std::string job_shm_prefix(uid_t uid, std::string_view job_id);

// True if the /dev/shm entry `name` belongs to job `job_id` of user `uid`.
bool shm_name_belongs_to_job(std::string_view name, uid_t uid, std::string_view job_id);

// Unlinks every regular file in `dir` that belongs to the job and is owned by `uid`. Returns the names
// removed. Errors (unreadable dir, failed unlink) are skipped: this is best effort.
// An empty job id removes nothing.
std::vector<std::string> sweep_job_shm(uid_t uid, std::string_view job_id,
                                       const std::string& dir = "/dev/shm");

}  // namespace collie::cli
