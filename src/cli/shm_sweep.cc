#include "cli/shm_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "backends/shm/layout.h"

namespace collie::cli {

std::string job_shm_prefix(uid_t uid, std::string_view job_id) {
  std::string p = "collie-" + std::to_string(static_cast<unsigned long>(uid)) + "-";
  p.append(job_id);
  return p;
}

bool shm_name_belongs_to_job(std::string_view name, uid_t uid, std::string_view job_id) {
  if (job_id.empty()) return false;
  if (name.substr(0, 4) == "sem.") name.remove_prefix(4);
  const std::string prefix = job_shm_prefix(uid, job_id);
  if (name.substr(0, prefix.size()) != prefix) return false;
  // Exactly the prefix, or the prefix followed by '-': "collie-0-ab-x" is job "ab"'s,
  // "collie-0-abc-x" is not.
  return name.size() == prefix.size() || name[prefix.size()] == '-';
}

std::vector<std::string> sweep_job_shm(uid_t uid, std::string_view job_id,
                                       const std::string& dir) {
  std::vector<std::string> removed;
  if (job_id.empty()) return removed;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return removed;
  const int dfd = dirfd(d);
  std::vector<std::string> doomed;
  while (dirent* e = readdir(d)) {
    std::string_view name(e->d_name);
    if (!shm_name_belongs_to_job(name, uid, job_id)) continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != uid) {
      continue;
    }
    doomed.emplace_back(name);
  }
  // Unlink after the scan: removing entries while readdir() walks them is allowed
  // but may skip names.
  for (const std::string& name : doomed) {
    if (unlinkat(dfd, name.c_str(), 0) == 0) removed.push_back(name);
  }
  closedir(d);
  return removed;
}

namespace {

// The owner pid recorded in the segment header of open file `fd` (size `size`),
// or 0 when the header is not (yet) initialised or cannot be mapped.
pid_t header_pid(int fd, off_t size) {
  using detail::SegmentHeader;
  if (size < static_cast<off_t>(sizeof(SegmentHeader))) return 0;
  // Read-only and shared: we observe the owner's header without any way to
  // change it. The magic is stored last with release order by the owner, so
  // an acquire load of it makes the pid written before it visible.
  void* p = mmap(nullptr, sizeof(SegmentHeader), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return 0;
  const auto* h = static_cast<const SegmentHeader*>(p);
  pid_t pid = 0;
  if (h->magic.load(std::memory_order_acquire) == detail::kSegmentMagic) pid = h->pid;
  munmap(p, sizeof(SegmentHeader));
  return pid;
}

}  // namespace

StaleCheck check_stale_segment(int dir_fd, const char* name, uid_t uid) {
  const std::string prefix = "collie-" + std::to_string(static_cast<unsigned long>(uid)) + "-";
  if (std::string_view(name).substr(0, prefix.size()) != prefix) return StaleCheck::kNotCollie;
  // O_NOFOLLOW: a symlink planted under a collie name must not lead us elsewhere.
  // O_NONBLOCK: a FIFO under such a name must not block the launcher.
  int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == ELOOP ? StaleCheck::kNotCollie : StaleCheck::kUnreadable;
  struct stat st;
  StaleCheck verdict = StaleCheck::kUnreadable;
  if (fstat(fd, &st) != 0) {
    verdict = StaleCheck::kUnreadable;
  } else if (!S_ISREG(st.st_mode) || st.st_uid != uid) {
    verdict = StaleCheck::kNotCollie;
  } else if (pid_t pid = header_pid(fd, st.st_size); pid <= 0) {
    verdict = StaleCheck::kUnreadable;
  } else if (kill(pid, 0) != 0 && errno == ESRCH) {
    // Only "no such process" is proof of death. EPERM means a process with that
    // pid exists (perhaps a reused pid: keeping a leftover is the safe mistake);
    // a zombie is still "alive" here, as its launcher may still be running.
    verdict = StaleCheck::kOwnerDead;
  } else {
    verdict = StaleCheck::kOwnerAlive;
  }
  close(fd);
  return verdict;
}

std::vector<std::string> sweep_stale_shm(uid_t uid, const std::string& dir) {
  std::vector<std::string> removed;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return removed;
  const int dfd = dirfd(d);
  std::vector<std::string> doomed;
  while (dirent* e = readdir(d)) {
    if (check_stale_segment(dfd, e->d_name, uid) == StaleCheck::kOwnerDead) {
      doomed.emplace_back(e->d_name);
    }
  }
  // Checked again right before the unlink, which narrows the window in which
  // the name could have been re-created by a live process (same job id reused).
  for (const std::string& name : doomed) {
    if (check_stale_segment(dfd, name.c_str(), uid) == StaleCheck::kOwnerDead &&
        unlinkat(dfd, name.c_str(), 0) == 0) {
      removed.push_back(name);
    }
  }
  closedir(d);
  return removed;
}

}  // namespace collie::cli
