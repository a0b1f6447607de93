#include "backends/shm/cma.h"

#include <sys/prctl.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "collie/errors.h"

namespace collie::detail {

namespace {
const uint64_t g_probe = kCmaProbeValue;
std::atomic<uint64_t> g_bytes_read{0};  // relaxed: a count, ordered by nothing
std::atomic<uint64_t> g_bytes_written{0};

bool disabled_by_env() {
  const char* v = std::getenv("COLLIE_CMA");
  return v != nullptr && std::strcmp(v, "0") == 0;
}
}  // namespace

const uint64_t* cma_probe_word() { return &g_probe; }

bool cma_forced_by_env() {
  const char* v = std::getenv("COLLIE_CMA");
  return v != nullptr && std::strcmp(v, "always") == 0;
}

void cma_allow_peers() {
#ifdef PR_SET_PTRACER
  static std::once_flag once;
  // Fails harmlessly (EINVAL) where Yama is absent.
  std::call_once(once, [] { prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); });
#endif
}

bool cma_probe(pid_t pid, uint64_t remote_probe) {
  if (disabled_by_env() || remote_probe == 0) return false;
  uint64_t value = 0;
  iovec local{&value, sizeof value};
  iovec remote{reinterpret_cast<void*>(remote_probe), sizeof value};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof value) &&
         value == kCmaProbeValue;
}

namespace {
// process_vm_readv (or, with `write`, process_vm_writev) until all n bytes moved.
void cma_move(bool write, pid_t pid, uint8_t* local, uint64_t remote, size_t n,
              int peer_world_rank) {
  while (n > 0) {
    iovec l{local, n};
    iovec r{reinterpret_cast<void*>(remote), n};
    ssize_t moved =
        write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (moved <= 0) {
      if (moved < 0 && errno == EINTR) continue;
      throw CommError(
          std::string(write ? "writing " : "reading ") + std::to_string(n) +
          (n == 1 ? " byte" : " bytes") + (write ? " to rank " : " from rank ") +
          std::to_string(peer_world_rank) + " (pid " + std::to_string(pid) +
          (write ? ") with process_vm_writev" : ") with process_vm_readv") +
          " failed: " + (moved < 0 ? std::string(std::strerror(errno)) : "nothing copied") +
          " (did it exit or free the tensor?)");
    }
    local += moved;
    remote += static_cast<uint64_t>(moved);
    n -= static_cast<size_t>(moved);
  }
}
}  // namespace

void cma_read(pid_t pid, void* local, uint64_t remote, size_t n, int peer_world_rank) {
  cma_move(/*write=*/false, pid, static_cast<uint8_t*>(local), remote, n, peer_world_rank);
  g_bytes_read.fetch_add(n, std::memory_order_relaxed);
}

uint64_t cma_bytes_read() { return g_bytes_read.load(std::memory_order_relaxed); }

void cma_write(pid_t pid, uint64_t remote, const void* local, size_t n, int peer_world_rank) {
  // process_vm_writev only reads the local iovec; the cast is for the shared helper.
  cma_move(/*write=*/true, pid, const_cast<uint8_t*>(static_cast<const uint8_t*>(local)), remote, n,
           peer_world_rank);
  g_bytes_written.fetch_add(n, std::memory_order_relaxed);
}

uint64_t cma_bytes_written() { return g_bytes_written.load(std::memory_order_relaxed); }

}  // namespace collie::detail
