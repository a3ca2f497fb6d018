// ollie-runner's sandbox (issue 16): the guarded block of address space that holds every
// mapping of the runner the kernel must not remap, and the two seccomp filters, one
// installed before the kernel is loaded (its static constructors run under it) and a
// stricter one after. Part of the child; see the protocol comment in runner_main.cpp.
#pragma once

#include <cstdint>

namespace ollie::runner::child {

// An aligned block [base, base + 2^log2_size) with the same size reserved (PROT_NONE)
// below it. mprotect, munmap, madvise, mremap and mmap(MAP_FIXED) on any range that
// touches the block kill the process once a filter is installed (see sandbox.cpp for how
// the filter decides that with argument comparisons alone, and what it does not cover).
struct GuardedBlock {
  char* base = nullptr;
  unsigned log2_size = 0;
};

// Reserves a block of at least `bytes` (and at least `min_bytes`: no legitimate munmap or
// mprotect may be longer than the block; the kernel's memory limit bounds those).
// Returns false when the address space cannot be reserved.
bool reserve_block(uint64_t bytes, uint64_t min_bytes, GuardedBlock& block);

// Builds both filters now, while libseccomp may still probe the kernel (the filters
// forbid what it probes with). `sanitize`: opening a file fails with EACCES instead of
// killing once the kernel is loaded. Returns an error message, or null.
const char* prepare_filters(const GuardedBlock& block, bool sanitize);

// Before the kernel is loaded: what the loader needs (read-only opens, mmap, mprotect) stays
// allowed; sockets, new processes, exec, ptrace, kill, write-opens, file-system changes, prctl,
// limits and the guarded block are not. Sets no_new_privs.
const char* install_loader_filter();

// After the kernel is loaded, on top: no opens at all, no prctl or seccomp, no mprotect
// adding PROT_EXEC.
const char* install_kernel_filter();

}  // namespace ollie::runner::child
