#include "backends/shm/huge_page_probe.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

namespace collie::detail {
namespace {

// The PAGEMAP_SCAN interface of <linux/fs.h> (Linux 6.7), spelled out here
// because the headers this project builds against (Debian 12: 6.1) predate it.
// It is kernel ABI: fixed layouts and numbers.
struct PageRegion {
  uint64_t start;
  uint64_t end;
  uint64_t categories;
};
struct PageScanArg {
  uint64_t size;
  uint64_t flags;
  uint64_t start;
  uint64_t end;
  uint64_t walk_end;
  uint64_t vec;
  uint64_t vec_len;
  uint64_t max_pages;
  uint64_t category_inverted;
  uint64_t category_mask;
  uint64_t category_anyof_mask;
  uint64_t return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PageScanArg);
constexpr uint64_t kPageIsHuge = uint64_t{1} << 6;
constexpr uintptr_t kPageBytes = 4096;
constexpr size_t kRunsCounted = 16;

// /proc/self/pagemap, opened on first use and kept for the process's life
// (-1: unavailable).
int pagemap_fd() {
  static const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  return fd;
}

// Set once the kernel turned out not to know PAGEMAP_SCAN, so later calls cost
// nothing.
std::atomic<bool> scan_unsupported{false};

}  // namespace

std::optional<size_t> huge_page_bytes(const void* data, size_t bytes) {
  if (scan_unsupported.load(std::memory_order_relaxed)) return std::nullopt;
  const int fd = pagemap_fd();
  if (fd < 0) return std::nullopt;
  if (bytes == 0) return 0;
  PageRegion runs[kRunsCounted];
  PageScanArg arg{};
  arg.size = sizeof arg;
  arg.start = reinterpret_cast<uintptr_t>(data) & ~(kPageBytes - 1);
  arg.end = (reinterpret_cast<uintptr_t>(data) + bytes + kPageBytes - 1) & ~(kPageBytes - 1);
  arg.vec = reinterpret_cast<uintptr_t>(runs);
  arg.vec_len = kRunsCounted;
  arg.category_mask = kPageIsHuge;  // report only pages that are huge
  arg.return_mask = kPageIsHuge;
  const long found = ioctl(fd, kPagemapScan, &arg);
  if (found < 0) {
    // ENOTTY: a kernel without PAGEMAP_SCAN; it will not learn it later.
    if (errno == ENOTTY) scan_unsupported.store(true, std::memory_order_relaxed);
    return std::nullopt;
  }
  size_t huge = 0;
  for (long i = 0; i < found; ++i) huge += runs[i].end - runs[i].start;
  return huge;
}

bool lies_on_huge_pages(const void* data, size_t bytes) {
  const std::optional<size_t> huge = huge_page_bytes(data, bytes);
  return huge.has_value() && *huge * 2 >= bytes && bytes > 0;
}

}  // namespace collie::detail
