#include "memory_pages.h"

#include <sys/mman.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace collie::testing {

AdvisedMapping::AdvisedMapping(size_t bytes, int advice)
    : bytes_((bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes) {
  // One huge page more, to align the start.
  raw_ = mmap(nullptr, bytes_ + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
              -1, 0);
  if (raw_ == MAP_FAILED) throw std::runtime_error("mmap of " + std::to_string(bytes_) + " failed");
  const uintptr_t at =
      (reinterpret_cast<uintptr_t>(raw_) + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  data_ = reinterpret_cast<uint8_t*>(at);
  madvise(data_, bytes_, advice);
  std::memset(data_, 1, bytes_);
}

AdvisedMapping::~AdvisedMapping() { munmap(raw_, bytes_ + kHugePageBytes); }

std::string smaps_line(const void* address, std::string_view field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-' &&
        line.find(':') > line.find(' ')) {  // a mapping's first line: "begin-end perms ..."
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind(field, 0) == 0) return line;
  }
  return "";
}

size_t smaps_anon_huge_bytes(const void* address) {
  const std::string line = smaps_line(address, "AnonHugePages:");
  size_t kib = 0;
  if (!line.empty()) std::istringstream(line.substr(14)) >> kib;
  return kib << 10;
}

}  // namespace collie::testing
