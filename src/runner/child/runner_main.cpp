// ollie-runner: the only process that executes candidate kernel code. It loads one
// compiled kernel (or two, to time them side by side), calls it on buffers shared with
// the parent, and reports back.
//
// Protocol (version 7; structs in protocol.h):
//   * The parent (src/runner/runner.cpp) starts `ollie-runner` with posix_spawn (or inside
//     a jail), no arguments, stdin = /dev/null, stdout and stderr = the parent's stderr
//     (stderr = a pipe the parent reads, in a sanitizer run), and two more descriptors:
//     fd 3 = a memfd, fd 4 = the write end of a report pipe. The child closes any other.
//   * The memfd starts with a RequestHeader (magic, version, counts, total size, a random
//     nonce), the offset/size of every buffer, the dims values in graph.dims order, the
//     path of the .so and the name of its entry symbol (ollie_entry unless the parent asks
//     for another). Buffers are 64-byte aligned, each on pages of its own between guard
//     pages; inputs hold their dtype's values, outputs and unused bytes are 0xFF (NaN for
//     floats) so an unwritten element shows.
//   * The child (seal.h, sandbox.h) reads the request, keeps the nonce, maps the memfd
//     into a guarded block of address space (timed mode: a second view of it and a
//     private mapping for the times too), zeroes the header region (magic, nonce, paths:
//     nothing there says "ollie"), closes fd 3,
//     makes the header and guard pages inaccessible and the inputs read-only (flag
//     kProtect), moves the report pipe to a random high descriptor, and with kSandbox sets
//     its limits (RLIMIT_AS: what is mapped now plus memory_bytes; RLIMIT_CPU) and
//     installs the loader filter. Only then it dlopen()s the .so (RTLD_NOW | RTLD_LOCAL),
//     so the kernel's static constructors run filtered; checks they left the
//     floating-point environment alone; empties the environment (libgomp has read OMP_*
//     by then) and wipes the command line; installs the kernel filter on top; looks up the
//     entry symbol (a `void (void* const* buffers, const int64_t* dims)`, like the
//     adapter's ollie_entry), then either
//       - calls mode: makes n_calls calls in order, each on its own set of buffers,
//         timing them with CLOCK_MONOTONIC (the report has the sum), or
//       - timed mode (n_sets > 0): runs rounds on one live set of buffers (see
//         timed_rounds.h), through the second view that the kernel's protections do not
//         cover, and writes the times into the memfd after the last call;
//     checking after every call that the FP environment (MXCSR, x87 control word) is as
//     it was and, in timed mode, that the live inputs equal the staged set they came from
//     (else a Tampered report); then writes one Report with the nonce and _exit(0)s (no
//     static destructors of the kernel run). The parent believes one report with the
//     nonce, compares the inputs it wrote (calls mode) or staged (timed mode) with the
//     memfd afterwards, and reports Tampered otherwise.
//   * The filters (libseccomp, built before either is installed) kill the child
//     (SIGSYS): the loader filter on sockets, fork/vfork/exec, clone without
//     CLONE_THREAD, ptrace, kill, write-opens, file-system changes, prctl, limits and any
//     mprotect/munmap/madvise/mremap/mmap(MAP_FIXED) touching the guarded block; the
//     kernel filter on every open, seccomp and mprotect with PROT_EXEC. clone3 fails with
//     ENOSYS so that glibc creates threads with clone, whose flags the filter can check.
//     OutOfMemory is reported if operator new fails under the limit.
//   * With flag kSanitize (the verifier's full level: the kernel was built with
//     -fsanitize=address,undefined and the parent preloaded libasan and set ASAN_OPTIONS
//     and UBSAN_OPTIONS), everything in the memfd but the buffers' payload bytes is
//     poisoned in ASan's shadow and __sanitizer_sandbox_on_notify is called before the
//     kernel filter; that filter then answers opens with EACCES instead of killing (the
//     runtime reads /proc/self/maps while it reports), and UBSan, which reads its
//     options lazily from /proc/self/environ, gets them from __ubsan_default_options
//     below (a copy taken before the environment is emptied). A report ends the child
//     with protocol::kSanitizerExitCode; its stderr is a pipe the parent reads.
//   * Load failures are reported (status LoadError; the message carries dlerror() and,
//     for a missing entry, the symbol's name). A crash or a hang produces no report:
//     the parent learns from the wait status or its timeout.
//     Exit codes: 0 after a report, 2 when the request itself was unreadable, 3 when
//     the parent was already gone. The child gets SIGKILL when its parent dies.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "runner/child/protocol.h"
#include "runner/child/sandbox.h"
#include "runner/child/seal.h"
#include "runner/child/timed_rounds.h"

namespace {

namespace proto = ollie::runner::protocol;
namespace child = ollie::runner::child;

using child::EntryFn;
using child::write_report;

[[noreturn]] void bad_request(const char* what) {
  char message[512];
  std::snprintf(message, sizeof message, "ollie-runner: bad request: %s%s%s", what,
                errno ? ": " : "", errno ? std::strerror(errno) : "");
  write_report(proto::ReportStatus::BadRequest, 0, message);
  _exit(2);
}

[[noreturn]] void bad_request_plain(const char* what) {
  errno = 0;
  bad_request(what);
}

bool read_exact(void* dst, size_t bytes, off_t offset) {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    ssize_t n = pread(proto::kMemFd, p, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

// The end of the last page holding any of the buffer's bytes.
uint64_t page_end(const proto::Buffer& b, uint64_t page) {
  const uint64_t first = b.offset / page * page;
  return std::max(first + page, round_up(b.offset + b.bytes, page));
}

void protect(char* base, uint64_t offset, uint64_t bytes, int prot) {
  if (bytes > 0 && mprotect(base + offset, bytes, prot) != 0) bad_request("mprotect");
}

// Bytes of address space mapped now (from /proc/self/statm, read before the filter).
uint64_t mapped_bytes() {
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128] = {};
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  return std::strtoull(text, nullptr, 10) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

void out_of_memory() {
  write_report(
      proto::ReportStatus::OutOfMemory, 0,
      "the kernel ran out of memory (operator new failed under the runner's address-space limit)");
  _exit(0);
}

// The request as read from the memfd.
struct Request {
  proto::RequestHeader header{};
  bool timed = false;
  size_t per_call = 0, n_kernels = 1;
  std::vector<proto::Buffer> buffers;
  std::vector<int64_t> dims;
  std::vector<std::vector<char>> paths, symbols;
};

Request read_request() {
  errno = 0;
  Request r;
  proto::RequestHeader& h = r.header;
  if (!read_exact(&h, sizeof h, 0)) bad_request("cannot read the header from fd 3");
  if (std::memcmp(h.magic, proto::kRequestMagic, sizeof h.magic) != 0)
    bad_request_plain("wrong magic (fd 3 is not an ollie request)");
  if (h.version != proto::kVersion)
    bad_request_plain("protocol version mismatch between ollie and ollie-runner (rebuild both)");
  r.per_call = size_t{h.n_inputs} + h.n_outputs;
  r.timed = h.n_sets > 0;
  if (!r.timed && h.n_calls == 0) bad_request_plain("no calls");
  if (r.timed && (h.n_kernels < 1 || h.n_kernels > 2 || h.max_rounds == 0 ||
                  (h.fresh && (h.check_calls == 0 || h.fresh_offset < h.results_offset))))
    bad_request_plain(
        "a timed request needs one or two kernels, at least one round and, with fresh inputs, a "
        "check slot");
  const size_t n_buffers = r.timed ? r.per_call + size_t{h.n_sets} * h.n_inputs +
                                         size_t{h.n_kernels} * proto::check_groups(h) * h.n_outputs
                                   : r.per_call * h.n_calls;
  r.n_kernels = r.timed ? h.n_kernels : 1;
  r.buffers.resize(n_buffers);
  const bool dims_per_call = !r.timed && (h.flags & proto::kDimsPerCall);
  r.dims.resize(size_t{h.n_dims} * (dims_per_call ? h.n_calls : 1));
  off_t at = sizeof h;
  if (!read_exact(r.buffers.data(), n_buffers * sizeof(proto::Buffer), at))
    bad_request("buffer table");
  at += static_cast<off_t>(n_buffers * sizeof(proto::Buffer));
  if (!read_exact(r.dims.data(), r.dims.size() * sizeof(int64_t), at)) bad_request("dims");
  at += static_cast<off_t>(r.dims.size() * sizeof(int64_t));
  for (size_t k = 0; k < r.n_kernels; ++k) {
    const uint32_t path_len = k == 0 ? h.path_len : h.path2_len;
    const uint32_t entry_len = k == 0 ? h.entry_len : h.entry2_len;
    r.paths.emplace_back(size_t{path_len} + 1, '\0');
    r.symbols.emplace_back(size_t{entry_len} + 1, '\0');
    if (!read_exact(r.paths.back().data(), path_len, at)) bad_request("so path");
    at += static_cast<off_t>(path_len);
    if (!read_exact(r.symbols.back().data(), entry_len, at)) bad_request("entry symbol");
    at += static_cast<off_t>(entry_len);
  }
  return r;
}

// Each buffer's pages are its own, after a guard page (checked, so that protecting one
// buffer's pages never touches another's); the timing results fit after the last.
void check_layout(const Request& r, uint64_t page) {
  const proto::RequestHeader& h = r.header;
  uint64_t previous_end = h.header_size;
  for (const proto::Buffer& b : r.buffers) {
    if (b.offset % proto::kAlignment != 0 || b.offset / page * page < previous_end + page ||
        b.offset + b.bytes > h.total_size)
      bad_request_plain("buffer outside the memfd, misaligned, or without a guard page");
    previous_end = page_end(b, page);
  }
  if (r.timed && (h.results_offset < previous_end + page ||
                  h.results_offset + proto::timed_results_bytes(h) > h.total_size))
    bad_request_plain("no room for the timing results");
}

// The runner's mappings, all inside the guarded block: the kernel's view of the memfd
// and, in timed mode, the runner's own view and the private times.
struct Mappings {
  char* base = nullptr;
  char* view = nullptr;
  double* times = nullptr;
};

Mappings map_request(const Request& r, uint64_t page) {
  const proto::RequestHeader& h = r.header;
  const uint64_t memfd_span = round_up(h.total_size, page) + page;
  const uint64_t times_bytes = round_up(r.n_kernels * h.max_rounds * sizeof(double), page);
  const uint64_t needed = (r.timed ? 2 * memfd_span + times_bytes : memfd_span) + page;
  // No legitimate munmap or mprotect is longer than the block (sandbox.h): the kernel's
  // address-space limit bounds them, and without one (or under ASan) 1 TiB does.
  const uint64_t longest =
      h.memory_bytes > 0 && !(h.flags & proto::kSanitize) ? 2 * h.memory_bytes : uint64_t{1} << 40;
  child::GuardedBlock block;
  if (!child::reserve_block(needed, longest, block))
    bad_request("cannot reserve address space for the buffers");
  auto map_at = [&](char* at, uint64_t bytes, int flags, int fd) {
    void* p = mmap(at, bytes, PROT_READ | PROT_WRITE, flags | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) bad_request("mmap of the buffers");
    return static_cast<char*>(p);
  };
  Mappings m;
  m.base = map_at(block.base, h.total_size, MAP_SHARED, proto::kMemFd);
  if (r.timed) {
    m.view = map_at(block.base + memfd_span, h.total_size, MAP_SHARED, proto::kMemFd);
    m.times = reinterpret_cast<double*>(
        map_at(block.base + 2 * memfd_span, times_bytes, MAP_PRIVATE | MAP_ANONYMOUS, -1));
  }
  // Nothing in the memfd says "ollie", names the kernel's path or holds the nonce any
  // more (the parent reads only the buffers and the results back); the kernel can neither
  // remap nor write the memfd but through these mappings.
  std::memset(m.base, 0, h.header_size);
  close(proto::kMemFd);
  if (const char* error = child::prepare_filters(block, h.flags & proto::kSanitize))
    bad_request_plain(error);
  return m;
}

// Everything except the buffers' own pages is off limits; inputs are read-only; in timed
// mode only the live buffers are accessible in the kernel's view.
void protect_buffers(const Request& r, char* base, uint64_t page) {
  const proto::RequestHeader& h = r.header;
  protect(base, 0, h.header_size, PROT_NONE);
  uint64_t cursor = h.header_size;
  for (size_t i = 0; i < r.buffers.size(); ++i) {
    const uint64_t first = r.buffers[i].offset / page * page, end = page_end(r.buffers[i], page);
    protect(base, cursor, first - cursor, PROT_NONE);
    const bool input = r.timed ? i < h.n_inputs : i % r.per_call < h.n_inputs;
    if (r.timed && i >= r.per_call)
      protect(base, first, end - first, PROT_NONE);
    else if (input)
      protect(base, first, end - first, PROT_READ);
    cursor = end;
  }
  protect(base, cursor, h.total_size - cursor, PROT_NONE);
}

void set_limits(const proto::RequestHeader& header) {
  if (header.cpu_seconds > 0) {
    const rlimit cpu{header.cpu_seconds, header.cpu_seconds + 1};
    if (setrlimit(RLIMIT_CPU, &cpu) != 0) bad_request("setrlimit(RLIMIT_CPU)");
  }
  if (header.memory_bytes > 0) {
    // Never above a hard limit set from outside (ulimit -v): that one holds anyway.
    rlimit outside{};
    getrlimit(RLIMIT_AS, &outside);
    const uint64_t mapped = mapped_bytes();
    // The guarded block alone is more than the kernel's limit: without knowing what is
    // mapped, any limit would be wrong.
    if (mapped == 0)
      bad_request_plain(
          "cannot read /proc/self/statm to set the memory limit (mount /proc in the runner's "
          "sandbox)");
    const uint64_t limit = std::min<uint64_t>(mapped + header.memory_bytes, outside.rlim_max);
    const rlimit as{limit, limit};
    if (setrlimit(RLIMIT_AS, &as) != 0) bad_request("setrlimit(RLIMIT_AS)");
    std::set_new_handler(out_of_memory);
  }
}

std::vector<EntryFn> load_kernels(const Request& r) {
  std::vector<EntryFn> entries;
  for (size_t k = 0; k < r.n_kernels; ++k) {
    void* handle = dlopen(r.paths[k].data(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      write_report(proto::ReportStatus::LoadError, 0, dlerror());
      _exit(0);
    }
    dlerror();
    auto entry = reinterpret_cast<EntryFn>(dlsym(handle, r.symbols[k].data()));
    if (!entry) {
      const char* err = dlerror();
      char message[proto::kMaxMessage];
      std::snprintf(message, sizeof message, "the library defines no %s symbol (%s)",
                    r.symbols[k].data(), err ? err : "it resolves to null");
      write_report(proto::ReportStatus::LoadError, 0, message);
      _exit(0);
    }
    entries.push_back(entry);
  }
  return entries;
}

// Sanitizer mode: everything in the memfd that is not a buffer's payload (the header,
// guard pages, the slack between a buffer's end and its page end) is poisoned in ASan's
// shadow, so a read one element past an input is a report, not a read of the slack; and
// the runtimes cache what they will need under the sandbox (__sanitizer_sandbox_on_notify).
void prepare_sanitizer(char* base, uint64_t total_size, const std::vector<proto::Buffer>& buffers) {
  using Poison = void (*)(const volatile void*, size_t);
  if (auto poison = reinterpret_cast<Poison>(dlsym(RTLD_DEFAULT, "__asan_poison_memory_region"))) {
    uint64_t cursor = 0;
    for (const auto& b : buffers) {
      poison(base + cursor, b.offset - cursor);
      cursor = b.offset + b.bytes;
    }
    poison(base + cursor, total_size - cursor);
  }
  using Notify = void (*)(void*);
  if (auto notify = reinterpret_cast<Notify>(dlsym(RTLD_DEFAULT, "__sanitizer_sandbox_on_notify")))
    notify(nullptr);
}

// Calls mode: the calls in order, each on its own buffers (so state kept between calls
// shows), the FP environment checked after each (the parent compares the inputs).
double run_calls(const Request& r, EntryFn entry, std::vector<void*>& pointers) {
  double seconds = 0;
  for (uint32_t c = 0; c < r.header.n_calls; ++c) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const size_t dims_at = r.header.flags & proto::kDimsPerCall ? c * size_t{r.header.n_dims} : 0;
    entry(pointers.data() + c * r.per_call, r.dims.data() + dims_at);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    child::check_after_call(nullptr, 0, c + 1);
    seconds += double(t1.tv_sec - t0.tv_sec) + double(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  }
  return seconds;
}

}  // namespace

// UBSan's runtime reads its options lazily, at its first report, from /proc/self/environ,
// which the sandbox closes; it asks this hook first, so the parent's UBSAN_OPTIONS (copied
// before the environment was emptied) still apply.
extern "C" __attribute__((visibility("default"))) const char* __ubsan_default_options() {
  const char* copy = child::ubsan_options();
  const char* options = copy[0] ? copy : std::getenv("UBSAN_OPTIONS");
  return options ? options : "";
}

int main(int argc, char** argv) {
  child::close_other_fds();
  child::record_fp_env();
  child::open_thread_count();
  Request r = read_request();
  proto::RequestHeader& header = r.header;
  child::open_report_channel(header.nonce);
  header.nonce = 0;
  std::memset(header.magic, 0, sizeof header.magic);
  // Never outlive the parent: a hung kernel must not keep running after ollie is gone.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (header.parent_pid != 0 && static_cast<uint64_t>(getppid()) != header.parent_pid) _exit(3);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  check_layout(r, page);
  const Mappings m = map_request(r, page);
  std::vector<void*> pointers(r.buffers.size());
  for (size_t i = 0; i < r.buffers.size(); ++i) pointers[i] = m.base + r.buffers[i].offset;
  char* flush = nullptr;
  if (r.timed && header.flush_bytes > 0) {
    void* f = mmap(nullptr, header.flush_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (f == MAP_FAILED) bad_request("cannot map the cache-flush buffer");
    flush = static_cast<char*>(f);
    std::memset(flush, 1, header.flush_bytes);
  }
  if (header.flags & proto::kProtect) protect_buffers(r, m.base, page);

  const bool sandbox = header.flags & proto::kSandbox;
  if (sandbox) set_limits(header);
  if (sandbox)
    if (const char* error = child::install_loader_filter()) bad_request(error);
  const std::vector<EntryFn> entries = load_kernels(r);
  child::check_after_load();
  child::record_thread_limit();
  child::clear_environment(argc, argv);
  if (header.flags & proto::kSanitize) prepare_sanitizer(m.base, header.total_size, r.buffers);
  if (sandbox)
    if (const char* error = child::install_kernel_filter()) bad_request(error);

  double seconds = 0;
  if (r.timed) {
    child::TimedRequest request;
    request.header = &header;
    request.buffers = r.buffers.data();
    request.view = m.view;
    request.live = pointers.data();
    request.entries = entries;
    request.dims = r.dims.data();
    request.flush = flush;
    request.times = m.times;
    child::run_timed(request);
  } else {
    seconds = run_calls(r, entries[0], pointers);
  }
  std::fflush(stdout);
  write_report(proto::ReportStatus::Ok, seconds, "");
  _exit(0);
}
