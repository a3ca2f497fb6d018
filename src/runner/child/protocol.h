// The wire format between the runner library (parent) and ollie-runner (child); see the
// comment at the top of runner_main.cpp. Header-only and dependency-free on purpose.
#pragma once

#include <cstdint>

namespace ollie::runner::protocol {

// File descriptors the child finds already open (the parent dup2s them into place).
constexpr int kMemFd = 3;       // the memfd: header, then every buffer
constexpr int kReportFd = 4;    // write end of the report pipe

constexpr char kRequestMagic[8] = {'O', 'L', 'L', 'I', 'E', 'R', 'Q', '1'};
constexpr uint32_t kReportMagic = 0x4f4c5231;  // "OLR1"
constexpr uint32_t kVersion = 5;

// At offset 0 of the memfd. Followed directly by
//   Buffer buffers[n_inputs + n_outputs];   inputs first, then outputs
//   int64_t dims[n_dims];
//   char so_path[path_len];                 not NUL-terminated
//   char entry_symbol[entry_len];           not NUL-terminated; a C identifier
// The header region is padded to a page; every buffer starts on a page boundary and
// its pages are preceded and followed by a guard page (never a buffer's page).
struct RequestHeader {
  char magic[8];
  uint32_t version;
  uint32_t n_inputs;
  uint32_t n_outputs;
  uint32_t n_dims;
  uint64_t total_size;    // bytes of the whole memfd
  uint64_t header_size;   // bytes of the header region (a multiple of the page size)
  uint32_t path_len;
  uint32_t flags;         // kProtect...
  uint64_t parent_pid;    // the child dies with this process (PR_SET_PDEATHSIG)
  uint32_t entry_len;     // bytes of the entry symbol's name
  uint32_t n_calls;       // calls in order; call c uses buffer-table entries [c*n, (c+1)*n), n = inputs + outputs
  uint64_t memory_bytes;  // address space the kernel may add (RLIMIT_AS above what is mapped); 0: no limit
  uint64_t cpu_seconds;   // RLIMIT_CPU of the child (all threads); 0: no limit
};

// Inputs read-only, guard pages and the header PROT_NONE while the kernel runs.
constexpr uint32_t kProtect = 1;
// A seccomp filter, installed after the kernel is loaded, kills the child on any system
// call that reaches outside it (files, sockets, new processes, exec); threads are allowed.
constexpr uint32_t kSandbox = 2;
// The kernel was built with -fsanitize=address,undefined and the parent preloaded the
// sanitizer runtime. Everything around the buffers is poisoned in ASan's shadow, the
// runtime is told it is about to be sandboxed, and (with kSandbox) opening a file fails
// with EACCES instead of killing, because the runtime opens /proc/self/* while it writes
// its report. Sockets, new processes and exec still kill.
constexpr uint32_t kSanitize = 4;

// The exit code the parent gives ASan and UBSan (ASAN_OPTIONS / UBSAN_OPTIONS exitcode=)
// for a run with kSanitize: the child exits with it after the runtime printed a report.
constexpr int kSanitizerExitCode = 86;

struct Buffer {
  uint64_t offset;        // page-aligned
  uint64_t bytes;         // payload bytes (the mapping covers whole pages)
};

enum class ReportStatus : uint32_t {
  Ok = 0,          // the kernel returned; `seconds` is the call's wall time
  LoadError = 1,   // dlopen/dlsym failed; the message carries dlerror()
  BadRequest = 2,  // the child could not read the request; message says why
  OutOfMemory = 3, // operator new failed under the memory limit
};

// Written once to kReportFd, in a single write() (header + message <= PIPE_BUF, so
// the parent never sees half a report).
struct Report {
  uint32_t magic;
  uint32_t status;        // ReportStatus
  double seconds;
  uint32_t message_len;   // bytes following this struct
  uint32_t reserved;
};

constexpr uint32_t kMaxMessage = 3000;

}  // namespace ollie::runner::protocol
