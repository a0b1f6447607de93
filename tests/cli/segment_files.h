// Helpers for the stale-sweep tests: files that look like collie segments.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "backends/shm/layout.h"
#include "test_util.h"

namespace collie::cli::test {

// Writes `bytes` bytes starting with a SegmentHeader naming owner `pid`;
// `initialised` = the magic is stored (as the library does last).
inline void write_segment(const fs::path& p, pid_t pid, bool initialised = true,
                          size_t bytes = 8192) {
  std::vector<unsigned char> buf(bytes, 0);
  if (bytes >= sizeof(detail::SegmentHeader)) {
    alignas(64) unsigned char raw[sizeof(detail::SegmentHeader)];
    auto* h = new (raw) detail::SegmentHeader();
    h->pid = pid;
    if (initialised) h->magic.store(detail::kSegmentMagic);
    std::memcpy(buf.data(), raw, sizeof(raw));
    h->~SegmentHeader();
  }
  write_file(p, std::string(buf.begin(), buf.end()));
}

// The pid of a process that has exited and been reaped.
inline pid_t dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace collie::cli::test
