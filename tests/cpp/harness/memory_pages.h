// memory_pages.h — memory whose page size a test chooses, and what the kernel
// says about a mapping (/proc/self/smaps), for tests of code that behaves
// differently on transparent huge pages.
//
//   AdvisedMapping m(4 << 20, MADV_HUGEPAGE);          // 2 MiB-aligned, written through
//   size_t huge = smaps_anon_huge_bytes(m.data());     // what the kernel gave it
//   bool advised = smaps_line(p, "VmFlags:").find(" hg") != std::string::npos;
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace collie::testing {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// An anonymous private mapping of `bytes` (rounded up to whole 2 MiB pages)
// starting on a 2 MiB boundary, madvise()d with `advice` (MADV_HUGEPAGE,
// MADV_NOHUGEPAGE) and then written through, so every page is present.
// std::runtime_error if mmap fails.
class AdvisedMapping {
 public:
  AdvisedMapping(size_t bytes, int advice);
  ~AdvisedMapping();
  AdvisedMapping(const AdvisedMapping&) = delete;
  AdvisedMapping& operator=(const AdvisedMapping&) = delete;
  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  void* raw_ = nullptr;
  uint8_t* data_ = nullptr;
};

// The line starting with `field` ("VmFlags:", "AnonHugePages:") of the mapping
// of /proc/self/smaps that holds `address`; "" if there is none.
std::string smaps_line(const void* address, std::string_view field);

// AnonHugePages of the mapping that holds `address`, in bytes (0 if none).
size_t smaps_anon_huge_bytes(const void* address);

}  // namespace collie::testing
