// cpu_id: which CPU this process runs on, for the choices that were measured
// per CPU (the reduction kernels here, the shm engine's copy path and large
// copies).
//
//   if (cpu_vendor() == "AuthenticAMD" && cpu_family() >= 0x1A) ...  // Zen 5 on
#pragma once

#include <string>

namespace collie::detail {

// The CPUID vendor string ("GenuineIntel", "AuthenticAMD", ...), "" off x86.
std::string cpu_vendor();

// The CPU's family as the vendors number it (base plus extended family: Zen 4
// is 0x19, Zen 5 0x1A), 0 off x86.
unsigned cpu_family();

}  // namespace collie::detail
