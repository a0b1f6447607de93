#include "backends/shm/liveness.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

namespace collie::detail {

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
  return state != 'Z' && state != 'X';
}

}  // namespace collie::detail
