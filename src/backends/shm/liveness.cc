#include "backends/shm/liveness.h"

#include <dirent.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace collie::detail {

namespace {

// Does /proc/<pid>/task list any thread besides the leader?
bool other_threads_remain(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/task", static_cast<int>(pid));
  DIR* dir = opendir(path);
  if (dir == nullptr) return false;
  bool others = false;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.' && std::atoi(e->d_name) != pid) {
      others = true;
      break;
    }
  }
  closedir(dir);
  return others;
}

}  // namespace

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == EPERM;  // EPERM: exists, not ours to signal
  // kill() succeeds on zombies; the state letter after the command name says "Z".
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return true;  // no /proc: trust kill()
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');
  if (paren == nullptr || paren[1] == '\0') return true;
  char state = paren[2];
  if (state == 'X') return false;
  if (state != 'Z') return true;
  // A zombie leader whose other threads are still exiting is a process being torn
  // down, not yet dead: its parent (the launcher) hears of it only when the last
  // thread is gone. Calling it dead before then lets a peer fail, exit and be
  // noticed first, and the launcher would name that peer instead of the rank
  // that really died.
  return other_threads_remain(pid);
}

}  // namespace collie::detail
