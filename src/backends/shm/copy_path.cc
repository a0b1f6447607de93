#include "backends/shm/copy_path.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <cstring>
#include <string>

#include "collie/errors.h"

namespace collie::detail {

namespace {

// The CPUID vendor string (leaf 0: EBX, EDX, ECX), "" off x86.
std::string cpu_vendor() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return "";
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  return vendor;
#else
  return "";
#endif
}

CopyPath read_preference() {
  const char* v = std::getenv("COLLIE_COPY_PATH");
  const std::string choice = v != nullptr ? v : "";
  if (choice == "single") return CopyPath::kSingleCopy;
  if (choice == "staged") return CopyPath::kStaged;
  if (!choice.empty() && choice != "auto") {
    throw ValueError("environment variable COLLIE_COPY_PATH='" + choice +
                     "' is not auto, single or staged");
  }
  return copy_path_for_vendor(cpu_vendor());
}

}  // namespace

CopyPath copy_path_for_vendor(std::string_view vendor) {
  return vendor == "GenuineIntel" ? CopyPath::kSingleCopy : CopyPath::kStaged;
}

CopyPath copy_path_preference() {
  static const CopyPath preference = read_preference();
  return preference;
}

}  // namespace collie::detail
