// ollie-runner: the only process that executes candidate kernel code. It loads one
// compiled kernel, calls it once on buffers shared with the parent, and reports back.
//
// Protocol (version 2; structs in protocol.h):
//   * The parent (src/runner/runner.cpp) starts `ollie-runner` with posix_spawn, no
//     arguments, stdin = /dev/null, stdout and stderr = the parent's stderr, and exactly
//     two more descriptors: fd 3 = a memfd, fd 4 = the write end of a report pipe.
//     Everything else is closed.
//   * The memfd starts with a RequestHeader (magic, version, counts, total size), the
//     offset/size of every buffer (inputs in signature order, then outputs in return
//     order), the dims values in graph.dims order, the path of the .so and the name of
//     its entry symbol (ollie_entry unless the parent asks for another). Buffers are
//     page-aligned, each surrounded by guard pages; inputs hold their dtype's values,
//     outputs are pre-filled with 0xFF bytes (NaN for floats) so an unwritten element
//     shows.
//   * The child maps the memfd, makes the header and guard pages inaccessible and the
//     inputs read-only (flag kProtect), dlopen()s the .so (RTLD_NOW | RTLD_LOCAL),
//     looks up the entry symbol (a `void (void* const* buffers, const int64_t* dims)`,
//     like the adapter's ollie_entry), times one call with CLOCK_MONOTONIC, writes one
//     Report to fd 4 and _exit(0)s (no static destructors of the kernel run).
//   * Load failures are reported (status LoadError; the message carries dlerror() and,
//     for a missing entry, the symbol's name). A crash or a hang produces no report:
//     the parent learns from the wait status or its timeout.
//     Exit codes: 0 after a report, 2 when the request itself was unreadable, 3 when
//     the parent was already gone. The child gets SIGKILL when its parent dies.
#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runner/child/protocol.h"

namespace {

namespace proto = ollie::runner::protocol;

using EntryFn = void (*)(void* const*, const int64_t*);

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

void protect(char* base, uint64_t offset, uint64_t bytes, int prot) {
  if (bytes > 0 && mprotect(base + offset, bytes, prot) != 0) bad_request("mprotect");
}

}  // namespace

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
  if (static_cast<uint64_t>(getppid()) != header.parent_pid) _exit(3);
  const size_t n_buffers = size_t{header.n_inputs} + header.n_outputs;
  std::vector<proto::Buffer> buffers(n_buffers);
  std::vector<int64_t> dims(header.n_dims);
  std::vector<char> path(size_t{header.path_len} + 1, '\0');
  std::vector<char> symbol(size_t{header.entry_len} + 1, '\0');
  off_t at = sizeof header;
  if (!read_exact(buffers.data(), n_buffers * sizeof(proto::Buffer), at)) bad_request("buffer table");
  at += static_cast<off_t>(n_buffers * sizeof(proto::Buffer));
  if (!read_exact(dims.data(), dims.size() * sizeof(int64_t), at)) bad_request("dims");
  at += static_cast<off_t>(dims.size() * sizeof(int64_t));
  if (!read_exact(path.data(), header.path_len, at)) bad_request("so path");
  at += static_cast<off_t>(header.path_len);
  if (!read_exact(symbol.data(), header.entry_len, at)) bad_request("entry symbol");

  void* mapped = mmap(nullptr, header.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, proto::kMemFd, 0);
  if (mapped == MAP_FAILED) bad_request("mmap of the buffers");
  char* base = static_cast<char*>(mapped);
  std::vector<void*> pointers(n_buffers);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < n_buffers; ++i) {
    if (buffers[i].offset % page != 0 || buffers[i].offset + buffers[i].bytes > header.total_size) {
      errno = 0;
      bad_request("buffer outside the memfd");
    }
    pointers[i] = base + buffers[i].offset;
  }

  // Load before protecting: a failing load is the common, reportable case.
  void* handle = dlopen(path.data(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    write_report(proto::ReportStatus::LoadError, 0, dlerror());
    _exit(0);
  }
  dlerror();
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, symbol.data()));
  if (!entry) {
    const char* err = dlerror();
    char message[proto::kMaxMessage];
    std::snprintf(message, sizeof message, "the library defines no %s symbol (%s)", symbol.data(),
                  err ? err : "it resolves to null");
    write_report(proto::ReportStatus::LoadError, 0, message);
    _exit(0);
  }

  if (header.flags & proto::kProtect) {
    // Everything except the buffers' own pages is off limits; inputs are read-only.
    protect(base, 0, header.header_size, PROT_NONE);
    uint64_t cursor = header.header_size;
    for (size_t i = 0; i < n_buffers; ++i) {
      const uint64_t span = (buffers[i].bytes + page - 1) / page * page;
      protect(base, cursor, buffers[i].offset - cursor, PROT_NONE);
      if (i < header.n_inputs) protect(base, buffers[i].offset, span, PROT_READ);
      cursor = buffers[i].offset + span;
    }
    protect(base, cursor, header.total_size - cursor, PROT_NONE);
  }

  timespec t0{}, t1{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  entry(pointers.data(), dims.data());
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double seconds = double(t1.tv_sec - t0.tv_sec) + double(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  std::fflush(stdout);
  write_report(proto::ReportStatus::Ok, seconds, "");
  _exit(0);
}
