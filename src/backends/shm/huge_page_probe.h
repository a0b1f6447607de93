// huge_page_probe.h — whether a range of this process's memory lies on huge
// pages, asked of the kernel (PAGEMAP_SCAN, Linux 6.7 and later).
//
// Reading a peer's memory with process_vm_readv (CMA) pins its pages one
// 4 KiB page at a time, so on some machines the single copy it saves is worth
// it only when the data lies on transparent huge pages. AMD EPYC VM, 2 ranks
// exchanging 8 MiB through CMA against through the p2p ring: on huge pages
// 0.78-0.87 ms against 1.23-1.29 ms; on 4 KiB pages 2.3-2.6 ms against
// 0.98-1.15 ms (docs/algorithms.md, "Which copy path"). The sender of a large
// message asks this before choosing (p2p.cc).
//
//   if (lies_on_huge_pages(tensor.data(), tensor.nbytes())) { ... pull it ... }
#pragma once

#include <cstddef>
#include <optional>

namespace collie::detail {

// Bytes of [data, data + bytes) (rounded out to whole 4 KiB pages) that lie on
// huge pages (transparent or hugetlb), counting at most the first 16 runs of
// them; std::nullopt where the kernel cannot tell (before Linux 6.7, no
// /proc/self/pagemap). Costs one ioctl: ~1 us for 8 MiB on huge pages, ~6 us on
// 4 KiB pages.
std::optional<size_t> huge_page_bytes(const void* data, size_t bytes);

// Whether at least half of [data, data + bytes) lies on huge pages; false where
// the kernel cannot tell.
bool lies_on_huge_pages(const void* data, size_t bytes);

}  // namespace collie::detail
