#include "backends/shm/large_copy.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "backends/shm/copy_path.h"

namespace collie::detail {
namespace {

// CPUID 7.0 EBX bit 9: Enhanced REP MOVSB.
bool cpu_has_erms() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ebx & (1u << 9)) != 0;
#else
  return false;
#endif
}

}  // namespace

bool large_copy_rep_movsb_for_cpu(std::string_view vendor, unsigned family, bool erms) {
  return vendor == "AuthenticAMD" && family >= 0x1A && erms;
}

bool large_copy_uses_rep_movsb() {
#if defined(__x86_64__)
  static const bool uses = large_copy_rep_movsb_for_cpu(cpu_vendor(), cpu_family(), cpu_has_erms());
  return uses;
#else
  return false;
#endif
}

size_t large_copy_piece_bytes(size_t n) {
  return n >= kRepMovsbStreamsFrom ? kLargeCopyPieceBytes : n;
}

namespace {

void copy_in_pieces(void* dst, const void* src, size_t n, size_t piece) {
#if defined(__x86_64__)
  if (n >= kLargeCopyBytes && large_copy_uses_rep_movsb()) {
    // `rep movsb` advances dst and src and counts the piece down to 0.
    for (size_t left = n; left > 0;) {
      size_t count = std::min(piece, left);
      left -= count;
      asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(count) : : "memory");
    }
    return;
  }
#endif
  (void)piece;
  std::memcpy(dst, src, n);
}

}  // namespace

void large_copy(void* dst, const void* src, size_t n) {
  copy_in_pieces(dst, src, n, large_copy_piece_bytes(n));
}

void large_copy_streaming(void* dst, const void* src, size_t n) { copy_in_pieces(dst, src, n, n); }

}  // namespace collie::detail
