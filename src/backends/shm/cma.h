// Cross-memory attach (CMA): copying straight from another process's memory with
// process_vm_readv(2), one copy through the kernel, for collectives on ordinary
// (private) tensors, which peers cannot map.
//
// Whether it works depends on the system: the kernel allows it between processes
// of the same user only when ptrace would be allowed (Yama's ptrace_scope, a
// container's seccomp profile and capabilities can forbid it). So each group
// agrees on it at its rendezvous: every rank reads a probe word from every peer
// and publishes its verdict; CMA is used only if every rank could read every
// peer, and COLLIE_CMA=0 on any rank turns it off for the group.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace collie::detail {

// The word every rank publishes the address of; peers read it to test CMA.
inline constexpr uint64_t kCmaProbeValue = 0x434d41434f4c4c49ull;  // "ILLOCAMC"
const uint64_t* cma_probe_word();

// Lets any process of this user read this one's memory (Yama ptrace_scope 1
// allows only ancestors otherwise). Called once, before the first probe.
void cma_allow_peers();

// COLLIE_CMA=always: collectives use CMA even with more ranks than CPUs
// (shm_group.h, cma_for_collectives). COLLIE_CMA=0 turns CMA off (cma_probe).
bool cma_forced_by_env();

// True when `pid`'s word at `remote_probe` reads as kCmaProbeValue; false for
// any failure (EPERM, ENOSYS, a different value) or when COLLIE_CMA=0.
bool cma_probe(pid_t pid, uint64_t remote_probe);

// Copies n bytes from `remote` in `pid`'s address space to `local`. CommError
// naming the peer when the kernel refuses or copies less (the peer died or
// freed the buffer).
void cma_read(pid_t pid, void* local, uint64_t remote, size_t n, int peer_world_rank);

// Bytes this process has read from its peers with cma_read so far (tests and
// diagnostics: which path a call took).
uint64_t cma_bytes_read();

// Copies n bytes from `local` to `remote` in `pid`'s address space
// (process_vm_writev: the same permission as reading). CommError as cma_read.
void cma_write(pid_t pid, uint64_t remote, const void* local, size_t n, int peer_world_rank);

// Bytes this process has written into its peers with cma_write so far (as
// cma_bytes_read).
uint64_t cma_bytes_written();

}  // namespace collie::detail
