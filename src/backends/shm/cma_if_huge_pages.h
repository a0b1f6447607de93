// cma_if_huge_pages.h — large broadcasts and scatters on groups that stage:
// the non-roots read the root's input with CMA when it lies on huge pages, and
// the data is staged otherwise; the root tells the others which, in one small
// step.
//
// Where a group stages (copy_path.h), broadcast, all_gather, gather and scatter
// read private tensors with process_vm_readv from kCmaMinBytes up to
// kCmaMaxBytes per rank, and stage larger calls: the kernel pins the pages it
// reads one 4 KiB page at a time, which costs more than the slots' second
// copy. On huge pages it does not (huge_page_probe.h), and where one rank's
// input is read by all the others the single copy wins at every size. AMD EPYC
// VM (Zen 4), 2 ranks, median per call, staged against CMA from huge pages:
//   broadcast  8 MiB 0.92-1.19 -> 0.47-0.67 ms, 64 MiB 8.2-8.9 -> 7.7-8.0,
//              128 MiB 16.2-16.6 -> 14.5-15.8;
//   scatter    8 MiB 1.1-1.7 -> 0.71-0.92 ms, 64 MiB 12.0-13.2 -> 8.6-9.0.
// all_gather and gather stay staged: there every rank's input is read, the
// staged steps keep both cores copying, and the two measured even (all_gather
// of 8-64 MiB per rank, gather of 8-64 MiB).
//
// Every rank must pick the same algorithm, but only the root can tell where its
// input lies, so such a call starts with one step in the step line (~0.5 us,
// against milliseconds of copying) in which the root publishes its answer; then
// every rank builds the CMA op if the answer is yes, the staged op if not.
//
//   engine.submit(group, make_cma_if_root_on_huge_pages(
//       call, in, bytes, root,
//       [=](const CollectiveCall& c, bool cma) {
//         return cma ? make_direct_broadcast(c, cma_buffers(in, out), count, dtype, root)
//                    : make_broadcast(c, in, out, count, dtype, root);
//       }));
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "backends/shm/collectives.h"

namespace collie::detail {

// Builds the op that moves the data once the root has answered: `read_with_cma`
// is the same on every rank.
using OpAfterAnswer =
    std::function<std::unique_ptr<OpState>(const CollectiveCall& call, bool read_with_cma)>;

// The root's answer, then the op `after_answer` makes: one OpState, one Work.
// `in` and `in_bytes` are this rank's input, asked about on the root only.
std::unique_ptr<OpState> make_cma_if_root_on_huge_pages(CollectiveCall c, const void* in,
                                                        size_t in_bytes, int root,
                                                        OpAfterAnswer after_answer);

}  // namespace collie::detail
