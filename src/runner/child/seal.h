// The child's seal (issue 16): the report channel (moved to an unpredictable descriptor,
// authenticated by the run's nonce), the check after every kernel call (floating-point
// environment, read-only inputs) and the wiping of what a kernel could read to recognise
// the harness (descriptors, environment, command line). Part of ollie-runner.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runner/child/protocol.h"

namespace ollie::runner::child {

// Closes every descriptor but 0, 1, 2, the memfd and the report pipe.
void close_other_fds();

// Moves the report pipe from protocol::kReportFd to a random high descriptor (closing
// kReportFd) and keeps the run's nonce, which every later report carries.
void open_report_channel(uint64_t nonce);

// One report, in one write (see protocol.h).
void write_report(protocol::ReportStatus status, double seconds, const char* message);

// Reports Tampered with `message` and ends the child.
[[noreturn]] void report_tampered(const char* message);

// Records the floating-point environment (MXCSR, x87 control word) the kernel must leave
// as it found it; called once at start, before the kernel is loaded.
void record_fp_env();

// Opens /proc/self/stat (kept open: the kernel filter forbids opening it later); called
// before the kernel is loaded.
void open_thread_count();
// Once the kernel is loaded and before it is called: when libgomp is in the process, an
// empty parallel region makes its thread pool as large as a team of the default size
// keeps between calls; the threads that exist then are all that may exist after any call.
void record_thread_limit();

// A read-only input as the kernel saw it and the bytes it must still hold.
struct InputCopy {
  const void* live = nullptr;
  const void* reference = nullptr;
  uint64_t bytes = 0;
};

// After every call of a kernel: the floating-point environment is the recorded one, no
// more threads exist than record_thread_limit allows (a thread the kernel left running
// could compute off the clock or slow the other kernel of a side-by-side timing), and
// every live input equals its reference (none in calls mode, where the parent compares).
// Otherwise reports Tampered, saying what changed and in which call (`call`, counted from
// 1 in this process), and ends the child. Cost: two register reads and a memcmp per input.
void check_after_call(const InputCopy* inputs, size_t n_inputs, uint64_t call);
// The same for the kernel's static constructors, once it is loaded (no inputs).
void check_after_load();

// Empties the environment once the kernel is loaded (libgomp read OMP_* while it was)
// and overwrites the command line and the original environment strings, so a kernel
// sees the same nothing in every mode. UBSan's options are kept (ubsan_options()).
void clear_environment(int argc, char** argv);
const char* ubsan_options();

}  // namespace ollie::runner::child
