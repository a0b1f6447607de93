#include "backends/shm/copy_path.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collie/errors.h"

namespace collie::detail {

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

// The CPU's family from CPUID leaf 1 (the base family, plus the extended family
// where the base is 0xF), 0 off x86.
unsigned cpu_family() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return 0;
  const unsigned base = (eax >> 8) & 0xF;
  return base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
#else
  return 0;
#endif
}

namespace {

// COLLIE_COPY_PATH, "" when unset or auto.
std::string chosen_by_env() {
  const char* v = std::getenv("COLLIE_COPY_PATH");
  const std::string choice = v != nullptr ? v : "";
  return choice == "auto" ? "" : choice;
}

CopyPath read_preference() {
  const std::string choice = chosen_by_env();
  if (choice == "single") return CopyPath::kSingleCopy;
  if (choice == "hybrid") return CopyPath::kHybrid;
  if (choice == "staged") return CopyPath::kStaged;
  if (!choice.empty()) {
    throw ValueError("environment variable COLLIE_COPY_PATH='" + choice +
                     "' is not auto, single, hybrid or staged");
  }
  return copy_path_for_cpu(cpu_vendor(), cpu_family());
}

}  // namespace

CopyPath copy_path_for_cpu(std::string_view vendor, unsigned family) {
  if (vendor == "GenuineIntel") return CopyPath::kSingleCopy;
  if (vendor == "AuthenticAMD" && family >= 0x1A) return CopyPath::kHybrid;
  return CopyPath::kStaged;
}

const char* copy_path_name(CopyPath path) {
  switch (path) {
    case CopyPath::kStaged:
      return "staged";
    case CopyPath::kHybrid:
      return "hybrid";
    case CopyPath::kSingleCopy:
      return "single";
  }
  return "?";
}

std::string describe_copy_path_preference() {
  const std::string name = copy_path_name(copy_path_preference());
  if (!chosen_by_env().empty()) return name + " (COLLIE_COPY_PATH)";
  const std::string vendor = cpu_vendor();
  if (vendor.empty()) return name + " (CPU vendor unknown)";
  char family[16];
  std::snprintf(family, sizeof family, "0x%x", cpu_family());
  return name + " (" + vendor + " family " + family + ")";
}

CopyPath copy_path_preference() {
  static const CopyPath preference = read_preference();
  return preference;
}

}  // namespace collie::detail
