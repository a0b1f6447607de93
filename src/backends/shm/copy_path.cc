#include "backends/shm/copy_path.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "collie/errors.h"

namespace collie::detail {

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
