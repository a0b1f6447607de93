// cpu_relax(): one pause in a polling loop, without a system call.
//
// On x86 the PAUSE instruction: it tells the core a spin-wait is running (the
// sibling hyperthread gets the pipeline, and leaving the loop does not flush it).
// Elsewhere a yield of the thread, which at least lets others run.
//
//   while (!flag.load(std::memory_order_acquire)) cpu_relax();
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#else
#include <thread>
#endif

namespace collie::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace collie::detail
