#include "cli/shm_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace collie::cli
