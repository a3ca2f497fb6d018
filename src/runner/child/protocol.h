// The wire format between the runner library (parent) and ollie-runner (child); see the
// comment at the top of runner_main.cpp. Header-only and dependency-free on purpose.
#pragma once

#include <cstdint>

namespace ollie::runner::protocol {

// File descriptors the child finds already open (the parent dup2s them into place). The
// child closes the memfd once it is mapped and moves the report pipe to a random high
// descriptor before it loads the kernel.
constexpr int kMemFd = 3;     // the memfd: header, then every buffer
constexpr int kReportFd = 4;  // write end of the report pipe

constexpr char kRequestMagic[8] = {'O', 'L', 'L', 'I', 'E', 'R', 'Q', '1'};
constexpr uint32_t kReportMagic = 0x4f4c5231;  // "OLR1"
constexpr uint32_t kVersion = 10;

// At offset 0 of the memfd. Followed directly by
//   Buffer buffers[n_buffers];              see below
//   int64_t dims[n_dims];
//   char so_path[path_len];                 not NUL-terminated
//   char entry_symbol[entry_len];           not NUL-terminated; a C identifier
//   and, for a timed request with n_kernels == 2, the second kernel's path and symbol
//   (path2_len, entry2_len bytes).
// The header region is padded to a page. Every buffer starts on a 64-byte boundary; its
// pages (from the page holding its first byte to the page holding its last) belong to it
// alone and are preceded and followed by a guard page.
//
// Buffer table. Calls mode (n_sets == 0): n_calls groups of n_inputs + n_outputs
// buffers, call c using group c. Timed mode (n_sets > 0): first the live group the
// kernels are called on (n_inputs + n_outputs), then the staged inputs of every input
// set (n_sets groups of n_inputs), then the check slots (n_kernels x n_sets groups of
// n_outputs; slot [k][s] receives kernel k's outputs of its last repetition on set s;
// with `fresh`, n_kernels x check_calls groups instead: see below).
struct RequestHeader {
  char magic[8];
  uint32_t version;
  uint32_t n_inputs;
  uint32_t n_outputs;
  uint32_t n_dims;
  uint64_t total_size;   // bytes of the whole memfd
  uint64_t header_size;  // bytes of the header region (a multiple of the page size)
  uint32_t path_len;
  uint32_t flags;         // kProtect...
  uint64_t parent_pid;    // the child exits unless this is its parent; 0: do not check (a
                          // PID namespace); it dies with its parent either way (PDEATHSIG)
  uint32_t entry_len;     // bytes of the entry symbol's name
  uint32_t n_calls;       // calls mode: calls in order
  uint64_t memory_bytes;  // address space the kernel may add (RLIMIT_AS above what is mapped); 0:
                          // no limit
  uint64_t cpu_seconds;   // RLIMIT_CPU of the child (all threads); 0: no limit
  // Timed mode (n_sets > 0): rounds of repetitions. Round r refills the live inputs
  // from set r % n_sets, then calls every kernel once (in turn, order reversed on odd
  // rounds), each call preceded by poisoning the live outputs and, when flush_bytes > 0,
  // by writing a buffer of that size (cold caches); only the call itself is timed.
  // With warm_call = 1, each timed call is preceded by an untimed call of the same kernel
  // on the next input set ((r + 1) % n_sets; the live inputs are refilled for it and back
  // again after it; outputs poisoned before and after it; before any flush): the timed
  // call finds the kernel's OpenMP threads awake, as in a loop of calls.
  // `warmup` untimed rounds first, then timed rounds until at least min_rounds were
  // made and budget_seconds have passed, or max_rounds were made.
  uint32_t n_sets;
  uint32_t n_kernels;  // 1, or 2 for a side-by-side comparison
  uint32_t path2_len, entry2_len;
  uint32_t warmup, min_rounds, max_rounds, warm_call;
  double budget_seconds;
  uint64_t flush_bytes;
  uint64_t results_offset;  // TimedResults, then double seconds[n_kernels][max_rounds]

  // ---- Fresh inputs (timed mode; issue 16, "a harness a kernel cannot predict") ----
  // With fresh = 1 no call sees inputs any earlier call saw. Before every kernel call
  // (warm-up, warm and timed alike) the live inputs are refilled from the call's set
  // rotated by a random number of elements (1..N-1 per input, from getrandom), and, as the
  // last step before the clock starts (after any flush), fresh_points random elements of
  // each input (positions from getrandom drawn at that moment) are overwritten with the
  // values of the next set ((set + 1) % n_sets) at the same positions. The check slots
  // are then n_kernels x check_calls groups of n_outputs (instead of n_kernels x n_sets):
  // slot [k][j] holds the outputs of a timed call of kernel k chosen after the call by
  // reservoir sampling (getrandom), a uniform sample of check_calls of its timed calls,
  // and fresh log entry [k][j] says which inputs that call saw (FreshEntry).
  // The fresh region at fresh_offset: uint32_t element_bytes[n_inputs] (written by the
  // parent), padded to 8 bytes, then FreshEntry records (fresh_entry_bytes each).
  uint32_t fresh;
  uint32_t check_calls;
  uint32_t fresh_points;
  uint32_t fresh_reserved;
  uint64_t fresh_offset;

  // ---- Pace (timed mode; the search gives up on hopeless candidates early) ----
  // call_limit_seconds > 0: every call of the first kernel (warm-up, warm and timed) runs
  // under a one-shot ITIMER_REAL of that many seconds; a call that runs longer ends the
  // child by SIGALRM (the parent reports it as over the limit). abandon_ratio > 0 (two
  // kernels): after every round (warm-up rounds included) in which each kernel has made
  // at least two calls on the clock (the first kernel ten, unless its calls took 10 ms
  // together), the rounds stop when the first kernel's fastest call so far is more than
  // abandon_ratio times the second's (TimedResults::abandoned).
  // cap_seconds > 0: the timed rounds stop once this much time has passed since the
  // first timed round began and at least min(min_rounds, 2) rounds were made, even
  // before min_rounds (a slow kernel's rounds are bounded by time).
  double call_limit_seconds;
  double abandon_ratio;
  double cap_seconds;

  // Random per run; every report carries it back. The child zeroes the header region
  // (this, the magic, the paths) before the kernel is loaded, so a report the kernel
  // forges lacks it.
  uint64_t nonce;
};

// Written by the child into the memfd at results_offset in timed mode.
struct TimedResults {
  uint32_t rounds;  // timed rounds completed
  uint32_t reserved;
  double warmup_seconds;  // wall time of the warm-up rounds
  // ---- Fresh inputs (see RequestHeader::fresh) ----
  uint32_t fresh_errno;  // getrandom failed with this errno (the rounds stopped); 0: fine
  uint32_t fresh_reserved;
  // ---- Pace (see RequestHeader::abandon_ratio) ----
  uint32_t abandoned;  // 1: the rounds stopped because the first kernel was too slow
  uint32_t pace_reserved;
  double fastest[2];  // each kernel's fastest call on the clock (warm-up rounds included); 0: none
};

// One checked call of fresh mode, followed by uint64_t rotation[n_inputs] (the live input
// i held set `set`'s element (p + rotation[i]) % N at p) and uint64_t
// points[n_inputs][fresh_points] (then, in that order, element p of input i was
// overwritten with element p of set (set + 1) % n_sets).
struct FreshEntry {
  uint32_t used;    // 0: the slot was never filled (fewer timed calls than check_calls)
  uint32_t kernel;  // 0 or 1
  uint32_t round;   // timed round
  uint32_t set;
};
inline uint64_t fresh_entry_bytes(const RequestHeader& h) {
  return sizeof(FreshEntry) + uint64_t{8} * h.n_inputs * (1 + uint64_t{h.fresh_points});
}
inline uint64_t fresh_log_offset(const RequestHeader& h) {
  return h.fresh_offset + (uint64_t{4} * h.n_inputs + 7) / 8 * 8;
}
// Check slot groups per kernel (see the buffer table above).
inline uint64_t check_groups(const RequestHeader& h) { return h.fresh ? h.check_calls : h.n_sets; }
// Bytes from results_offset to the end of what timed mode writes.
inline uint64_t timed_results_bytes(const RequestHeader& h) {
  const uint64_t times = sizeof(TimedResults) + uint64_t{h.n_kernels} * h.max_rounds * 8;
  if (!h.fresh) return times;
  return fresh_log_offset(h) - h.results_offset +
         uint64_t{h.n_kernels} * h.check_calls * fresh_entry_bytes(h);
}

// Inputs read-only, guard pages and the header PROT_NONE while the kernel runs.
constexpr uint32_t kProtect = 1;
// Two stacked seccomp filters, one before the kernel is loaded (its constructors run under
// it) and a stricter one after, kill the child on any system call that reaches outside
// the kernel (files, sockets, new processes, exec, prctl, the runner's mappings); threads
// are allowed. See child/sandbox.h.
constexpr uint32_t kSandbox = 2;
// The kernel was built with -fsanitize=address,undefined and the parent preloaded the
// sanitizer runtime. Everything around the buffers is poisoned in ASan's shadow, the
// runtime is told it is about to be sandboxed, and (with kSandbox) opening a file fails
// with EACCES instead of killing, because the runtime opens /proc/self/* while it writes
// its report. Sockets, new processes and exec still kill.
constexpr uint32_t kSanitize = 4;

// Calls mode: the dims table holds n_calls groups of n_dims values, call c using group c
// (the same spec at other dims in every call: the shape sweep in one process).
constexpr uint32_t kDimsPerCall = 8;

// The exit code the parent gives ASan and UBSan (ASAN_OPTIONS / UBSAN_OPTIONS exitcode=)
// for a run with kSanitize: the child exits with it after the runtime printed a report.
constexpr int kSanitizerExitCode = 86;

struct Buffer {
  uint64_t offset;  // 64-byte aligned
  uint64_t bytes;   // payload bytes
};

constexpr uint64_t kAlignment = 64;  // every buffer's start (the kernel ABI's promise)

enum class ReportStatus : uint32_t {
  Ok = 0,           // the kernel returned; `seconds` is the call's wall time
  LoadError = 1,    // dlopen/dlsym failed; the message carries dlerror()
  BadRequest = 2,   // the child could not read the request; message says why
  OutOfMemory = 3,  // operator new failed under the memory limit
  Tampered = 4,     // the kernel changed the FP environment or a read-only input; message says
};

// Written once to the report pipe, in a single write() (header + message <= PIPE_BUF, so
// the parent never sees half a report). The parent believes exactly one report carrying
// the run's nonce (BadRequest before the header was read carries 0).
struct Report {
  uint32_t magic;
  uint32_t status;  // ReportStatus
  double seconds;
  uint32_t message_len;  // bytes following this struct
  uint32_t reserved;
  uint64_t nonce;  // RequestHeader::nonce
  // The child's own CPU time, all its threads (getrusage RUSAGE_SELF) when it reports: the
  // parent cannot reap it (it runs under bwrap), so bench counts it as the kernel's, not
  // as other processes' (measure::BenchReport::others_cpus).
  double cpu_seconds;
};

constexpr uint32_t kMaxMessage = 3000;

}  // namespace ollie::runner::protocol
