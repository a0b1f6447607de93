// BlockCache: keeps freed large allocations for reuse.
//
// Collectives return new tensors (MindSpore's convention), so a loop of
// all_reduce calls on a 64 MiB tensor would otherwise map, fault in (the kernel
// zeroes every page) and unmap 64 MiB per call — often more time than the
// communication itself. Blocks of at least kBlockCacheMinBytes are rounded up (to
// 64 KiB below 2 MiB, to 2 MiB above) and, when freed, kept (up to
// COLLIE_ALLOC_CACHE_BYTES, default 512 MiB in all) for the next allocation of the
// same rounded size, the last freed first (its memory is the likeliest still in
// the CPU caches). Blocks of 2 MiB or more are aligned to 2 MiB and ask for
// transparent huge pages (COLLIE_HUGE_PAGES=0: not).
#pragma once

#include <cstddef>

namespace collie::detail {

inline constexpr size_t kBlockCacheMinBytes = 64 << 10;

// Returns 64-byte aligned memory of at least `bytes` (rounded as above), or
// nullptr if out of memory. `*capacity` receives the block's real size.
void* cached_alloc(size_t bytes, size_t* capacity);
// Gives a block from cached_alloc back (it may be kept for reuse or freed).
void cached_free(void* block, size_t capacity);

// Whether blocks of 2 MiB or more ask for transparent huge pages (not with
// COLLIE_HUGE_PAGES=0).
bool large_blocks_ask_for_huge_pages();

}  // namespace collie::detail
