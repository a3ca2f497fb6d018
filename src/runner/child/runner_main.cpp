// ollie-runner: the only process that executes candidate kernel code. It loads one
// compiled kernel (or two, to time them side by side), calls it on buffers shared with
// the parent, and reports back.
//
// Protocol (version 5; structs in protocol.h):
//   * The parent (src/runner/runner.cpp) starts `ollie-runner` with posix_spawn, no
//     arguments, stdin = /dev/null, stdout and stderr = the parent's stderr (stderr = a
//     pipe the parent reads, in a sanitizer run), and exactly two more descriptors:
//     fd 3 = a memfd, fd 4 = the write end of a report pipe. Everything else is closed.
//   * The memfd starts with a RequestHeader (magic, version, counts, total size), the
//     offset/size of every buffer, the dims values in graph.dims order, the path of the
//     .so and the name of its entry symbol (ollie_entry unless the parent asks for
//     another). Buffers are 64-byte aligned, each on pages of its own between guard
//     pages; inputs hold their dtype's values, outputs and unused bytes are 0xFF (NaN for
//     floats) so an unwritten element shows.
//   * The child maps the memfd, makes the header and guard pages inaccessible and the
//     inputs read-only (flag kProtect), dlopen()s the .so (RTLD_NOW | RTLD_LOCAL),
//     looks up the entry symbol (a `void (void* const* buffers, const int64_t* dims)`,
//     like the adapter's ollie_entry), then either
//       - calls mode: makes n_calls calls in order, each on its own set of buffers,
//         timing them with CLOCK_MONOTONIC (the report has the sum), or
//       - timed mode (n_sets > 0): runs rounds on one live set of buffers (see
//         timed_rounds.h), through a second mapping of the memfd that the kernel's
//         protections do not cover, and writes the times into the memfd;
//     then writes one Report to fd 4 and _exit(0)s (no static destructors of the kernel
//     run).
//   * With flag kSandbox, once the kernel is loaded and before it is called, the child
//     limits its address space (RLIMIT_AS: what is mapped now plus memory_bytes) and CPU
//     time (RLIMIT_CPU), reports OutOfMemory if operator new then fails, and installs a
//     seccomp filter (libseccomp) that kills it (SIGSYS) on opening files, sockets,
//     fork/vfork/exec, clone without CLONE_THREAD and other ways out; clone3 fails with
//     ENOSYS so that glibc creates threads with clone, whose flags the filter can check.
//   * With flag kSanitize (the verifier's full level: the kernel was built with
//     -fsanitize=address,undefined and the parent preloaded libasan and set ASAN_OPTIONS
//     and UBSAN_OPTIONS), everything in the memfd but the buffers' payload bytes is
//     poisoned in ASan's shadow and __sanitizer_sandbox_on_notify is called before the
//     sandbox; the filter then answers open/openat/... with EACCES instead of killing
//     (the runtime reads /proc/self/maps while it reports), and UBSan, which reads its
//     options lazily from /proc/self/environ, gets them from __ubsan_default_options
//     below. The address-space limit is computed as usual: ASan's reserved shadow counts
//     as mapped. A report ends the child with protocol::kSanitizerExitCode; its stderr is
//     a pipe the parent reads.
//   * Load failures are reported (status LoadError; the message carries dlerror() and,
//     for a missing entry, the symbol's name). A crash or a hang produces no report:
//     the parent learns from the wait status or its timeout.
//     Exit codes: 0 after a report, 2 when the request itself was unreadable, 3 when
//     the parent was already gone. The child gets SIGKILL when its parent dies.
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <algorithm>
#include <new>
#include <vector>

#include "runner/child/protocol.h"
#include "runner/child/timed_rounds.h"

namespace {

namespace proto = ollie::runner::protocol;

using ollie::runner::child::EntryFn;

void write_report(proto::ReportStatus status, double seconds, const char* message) {
  char buf[sizeof(proto::Report) + proto::kMaxMessage];
  size_t len = message ? std::strlen(message) : 0;
  if (len > proto::kMaxMessage) len = proto::kMaxMessage;
  proto::Report report{};
  report.magic = proto::kReportMagic;
  report.status = static_cast<uint32_t>(status);
  report.seconds = seconds;
  report.message_len = static_cast<uint32_t>(len);
  std::memcpy(buf, &report, sizeof report);
  if (len) std::memcpy(buf + sizeof report, message, len);
  size_t total = sizeof report + len;
  // One write of <= PIPE_BUF bytes is atomic; retry only on EINTR.
  while (write(proto::kReportFd, buf, total) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void bad_request(const char* what) {
  char message[512];
  std::snprintf(message, sizeof message, "ollie-runner: bad request: %s%s%s", what,
                errno ? ": " : "", errno ? std::strerror(errno) : "");
  write_report(proto::ReportStatus::BadRequest, 0, message);
  _exit(2);
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

// The end of the last page holding any of the buffer's bytes.
uint64_t page_end(const proto::Buffer& b, uint64_t page) {
  const uint64_t first = b.offset / page * page;
  return std::max(first + page, (b.offset + b.bytes + page - 1) / page * page);
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

// The system calls that reach outside the kernel's own computation: opening files, and
// the rest.
const int kOpens[] = {SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(creat),
                      SCMP_SYS(open_by_handle_at)};
const int kForbidden[] = {
    SCMP_SYS(socket),
    SCMP_SYS(socketpair),
    SCMP_SYS(connect),
    SCMP_SYS(bind),
    SCMP_SYS(listen),
    SCMP_SYS(accept),
    SCMP_SYS(accept4),
    SCMP_SYS(sendto),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvfrom),
    SCMP_SYS(recvmsg),
    SCMP_SYS(fork),
    SCMP_SYS(vfork),
    SCMP_SYS(execve),
    SCMP_SYS(execveat),
    SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev),
    SCMP_SYS(unlink),
    SCMP_SYS(unlinkat),
    SCMP_SYS(rename),
    SCMP_SYS(renameat),
    SCMP_SYS(renameat2),
    SCMP_SYS(mkdir),
    SCMP_SYS(mkdirat),
    SCMP_SYS(rmdir),
    SCMP_SYS(link),
    SCMP_SYS(linkat),
    SCMP_SYS(symlink),
    SCMP_SYS(symlinkat),
    SCMP_SYS(chmod),
    SCMP_SYS(fchmodat),
    SCMP_SYS(chown),
    SCMP_SYS(fchownat),
    SCMP_SYS(truncate),
    SCMP_SYS(mount),
    SCMP_SYS(umount2),
    SCMP_SYS(chdir),
    SCMP_SYS(fchdir),
    SCMP_SYS(setrlimit),
    SCMP_SYS(prlimit64),
    SCMP_SYS(seccomp),
    SCMP_SYS(memfd_create),
    SCMP_SYS(kill),
    SCMP_SYS(bpf),
    SCMP_SYS(io_uring_setup),
    SCMP_SYS(userfaultfd),
};

void install_sandbox(const proto::RequestHeader& header) {
  if (header.cpu_seconds > 0) {
    const rlimit cpu{header.cpu_seconds, header.cpu_seconds + 1};
    if (setrlimit(RLIMIT_CPU, &cpu) != 0) bad_request("setrlimit(RLIMIT_CPU)");
  }
  if (header.memory_bytes > 0) {
    const uint64_t limit = mapped_bytes() + header.memory_bytes;
    const rlimit as{limit, limit};
    if (setrlimit(RLIMIT_AS, &as) != 0) bad_request("setrlimit(RLIMIT_AS)");
    std::set_new_handler(out_of_memory);
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) bad_request("seccomp_init");
  bool ok = true;
  // The sanitizer runtime reads /proc/self/maps (and, for UBSan, /proc/self/environ) while
  // it reports; it copes with a failed open, not with being killed in the middle.
  const uint32_t open_action =
      header.flags & proto::kSanitize ? SCMP_ACT_ERRNO(EACCES) : SCMP_ACT_KILL_PROCESS;
  for (int sys : kOpens)
    if (sys >= 0) ok = ok && seccomp_rule_add(ctx, open_action, sys, 0) == 0;
  for (int sys : kForbidden)
    if (sys >= 0) ok = ok && seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, sys, 0) == 0;
  // New threads yes, new processes no.
  ok = ok && seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)) == 0;
  ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0;
  ok = ok && seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  if (!ok) {
    errno = 0;
    bad_request("cannot install the seccomp filter");
  }
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

}  // namespace

// UBSan's runtime reads its options lazily, at its first report, from /proc/self/environ,
// which the sandbox closes; it asks this hook first, so the parent's UBSAN_OPTIONS (in our
// environment, read without opening a file) still apply.
extern "C" __attribute__((visibility("default"))) const char* __ubsan_default_options() {
  const char* options = std::getenv("UBSAN_OPTIONS");
  return options ? options : "";
}

int main() {
  errno = 0;
  proto::RequestHeader header{};
  if (!read_exact(&header, sizeof header, 0)) bad_request("cannot read the header from fd 3");
  if (std::memcmp(header.magic, proto::kRequestMagic, sizeof header.magic) != 0) {
    errno = 0;
    bad_request("wrong magic (fd 3 is not an ollie request)");
  }
  if (header.version != proto::kVersion) {
    errno = 0;
    bad_request("protocol version mismatch between ollie and ollie-runner (rebuild both)");
  }
  // Never outlive the parent: a hung kernel must not keep running after ollie is gone.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (header.parent_pid != 0 && static_cast<uint64_t>(getppid()) != header.parent_pid) _exit(3);
  const size_t per_call = size_t{header.n_inputs} + header.n_outputs;
  const bool timed = header.n_sets > 0;
  if (!timed && header.n_calls == 0) {
    errno = 0;
    bad_request("no calls");
  }
  if (timed && (header.n_kernels < 1 || header.n_kernels > 2 || header.max_rounds == 0 ||
                (header.fresh &&
                 (header.check_calls == 0 || header.fresh_offset < header.results_offset)))) {
    errno = 0;
    bad_request(
        "a timed request needs one or two kernels, at least one round and, with fresh inputs, a "
        "check slot");
  }
  const size_t n_buffers =
      timed ? per_call + size_t{header.n_sets} * header.n_inputs +
                  size_t{header.n_kernels} * proto::check_groups(header) * header.n_outputs
            : per_call * header.n_calls;
  const size_t n_kernels = timed ? header.n_kernels : 1;
  std::vector<proto::Buffer> buffers(n_buffers);
  std::vector<int64_t> dims(header.n_dims);
  std::vector<std::vector<char>> paths, symbols;
  off_t at = sizeof header;
  if (!read_exact(buffers.data(), n_buffers * sizeof(proto::Buffer), at))
    bad_request("buffer table");
  at += static_cast<off_t>(n_buffers * sizeof(proto::Buffer));
  if (!read_exact(dims.data(), dims.size() * sizeof(int64_t), at)) bad_request("dims");
  at += static_cast<off_t>(dims.size() * sizeof(int64_t));
  for (size_t k = 0; k < n_kernels; ++k) {
    const uint32_t path_len = k == 0 ? header.path_len : header.path2_len;
    const uint32_t entry_len = k == 0 ? header.entry_len : header.entry2_len;
    paths.emplace_back(size_t{path_len} + 1, '\0');
    symbols.emplace_back(size_t{entry_len} + 1, '\0');
    if (!read_exact(paths.back().data(), path_len, at)) bad_request("so path");
    at += static_cast<off_t>(path_len);
    if (!read_exact(symbols.back().data(), entry_len, at)) bad_request("entry symbol");
    at += static_cast<off_t>(entry_len);
  }

  void* mapped =
      mmap(nullptr, header.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, proto::kMemFd, 0);
  if (mapped == MAP_FAILED) bad_request("mmap of the buffers");
  char* base = static_cast<char*>(mapped);
  std::vector<void*> pointers(n_buffers);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t previous_end = header.header_size;
  for (size_t i = 0; i < n_buffers; ++i) {
    // Each buffer's pages are its own, after a guard page (checked, so that protecting
    // one buffer's pages never touches another's).
    if (buffers[i].offset % proto::kAlignment != 0 ||
        buffers[i].offset / page * page < previous_end + page ||
        buffers[i].offset + buffers[i].bytes > header.total_size) {
      errno = 0;
      bad_request("buffer outside the memfd, misaligned, or without a guard page");
    }
    previous_end = page_end(buffers[i], page);
    pointers[i] = base + buffers[i].offset;
  }
  if (timed && (header.results_offset < previous_end + page ||
                header.results_offset + proto::timed_results_bytes(header) > header.total_size)) {
    errno = 0;
    bad_request("no room for the timing results");
  }

  // Load before protecting: a failing load is the common, reportable case.
  std::vector<EntryFn> entries;
  for (size_t k = 0; k < n_kernels; ++k) {
    void* handle = dlopen(paths[k].data(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      write_report(proto::ReportStatus::LoadError, 0, dlerror());
      _exit(0);
    }
    dlerror();
    auto entry = reinterpret_cast<EntryFn>(dlsym(handle, symbols[k].data()));
    if (!entry) {
      const char* err = dlerror();
      char message[proto::kMaxMessage];
      std::snprintf(message, sizeof message, "the library defines no %s symbol (%s)",
                    symbols[k].data(), err ? err : "it resolves to null");
      write_report(proto::ReportStatus::LoadError, 0, message);
      _exit(0);
    }
    entries.push_back(entry);
  }

  // Timed mode: the runner's own view of the memfd (staged inputs, check slots and
  // results stay inaccessible in the kernel's view), and the cache-flush buffer.
  char* view = nullptr;
  char* flush = nullptr;
  if (timed) {
    void* v =
        mmap(nullptr, header.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, proto::kMemFd, 0);
    if (v == MAP_FAILED) bad_request("second mmap of the buffers");
    view = static_cast<char*>(v);
    if (header.flush_bytes > 0) {
      void* f = mmap(nullptr, header.flush_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (f == MAP_FAILED) bad_request("cannot map the cache-flush buffer");
      flush = static_cast<char*>(f);
      std::memset(flush, 1, header.flush_bytes);
    }
  }

  if (header.flags & proto::kProtect) {
    // Everything except the buffers' own pages is off limits; inputs are read-only;
    // in timed mode only the live buffers are accessible.
    protect(base, 0, header.header_size, PROT_NONE);
    uint64_t cursor = header.header_size;
    for (size_t i = 0; i < n_buffers; ++i) {
      const uint64_t first = buffers[i].offset / page * page, end = page_end(buffers[i], page);
      protect(base, cursor, first - cursor, PROT_NONE);
      const bool input = timed ? i < header.n_inputs : i % per_call < header.n_inputs;
      if (timed && i >= per_call)
        protect(base, first, end - first, PROT_NONE);
      else if (input)
        protect(base, first, end - first, PROT_READ);
      cursor = end;
    }
    protect(base, cursor, header.total_size - cursor, PROT_NONE);
  }

  if (header.flags & proto::kSanitize) prepare_sanitizer(base, header.total_size, buffers);
  if (header.flags & proto::kSandbox) install_sandbox(header);

  double seconds = 0;
  if (timed) {
    ollie::runner::child::TimedRequest request;
    request.header = &header;
    request.buffers = buffers.data();
    request.view = view;
    request.live = pointers.data();
    request.entries = entries;
    request.dims = dims.data();
    request.flush = flush;
    ollie::runner::child::run_timed(request);
  } else {
    // The calls in order, each on its own buffers (so state kept between calls shows).
    for (uint32_t c = 0; c < header.n_calls; ++c) {
      timespec t0{}, t1{};
      clock_gettime(CLOCK_MONOTONIC, &t0);
      entries[0](pointers.data() + c * per_call, dims.data());
      clock_gettime(CLOCK_MONOTONIC, &t1);
      seconds += double(t1.tv_sec - t0.tv_sec) + double(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    }
  }
  std::fflush(stdout);
  write_report(proto::ReportStatus::Ok, seconds, "");
  _exit(0);
}
