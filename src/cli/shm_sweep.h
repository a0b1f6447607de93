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
// At launch, `collie run` also removes *stale* objects of any earlier job of the
// user: those whose owner process is dead (a job whose launcher was SIGKILLed never
// got its end-of-job sweep). The owner is the pid in the object's SegmentHeader
// (src/backends/shm/layout.h), read through a read-only mapping of its first page.
//
// Example:
//   auto removed = sweep_job_shm(getuid(), "1f3ax9c04be12");   // names removed
//   auto stale = sweep_stale_shm(getuid());                     // dead owners' objects
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

// What the launch-time sweep concludes about one /dev/shm entry.
enum class StaleCheck {
  kNotCollie,   // not "collie-<uid>-...", not a regular file, or not owned by uid
  kUnreadable,  // cannot be opened or mapped, too small, or no initialised header
  kOwnerAlive,  // the header's pid exists (or may: EPERM, a zombie, a reused pid)
  kOwnerDead,   // the header's pid does not exist: safe to remove
};

// Checks entry `name` of directory fd `dir_fd`. Never modifies anything.
StaleCheck check_stale_segment(int dir_fd, const char* name, uid_t uid);

// Unlinks every "collie-<uid>-*" regular file in `dir` owned by `uid` whose
// header names a dead owner (StaleCheck::kOwnerDead). Entries whose owner is alive
// or cannot be determined, POSIX semaphores ("sem.collie-..."), and other users'
// or programs' files are never touched. Returns the names removed; best effort.
std::vector<std::string> sweep_stale_shm(uid_t uid, const std::string& dir = "/dev/shm");

}  // namespace collie::cli
