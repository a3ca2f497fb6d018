// The child's seal (see seal.h).
#include "runner/child/seal.h"

#include <dlfcn.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ollie::runner::child {

namespace {

namespace proto = protocol;

int report_fd = proto::kReportFd;
uint64_t report_nonce = 0;
char ubsan_copy[4096];

struct FpEnv {
  uint32_t mxcsr = 0;
  uint16_t x87 = 0;
};
FpEnv recorded;
int thread_stat_fd = -1;  // /proc/self/stat, or -1 (no /proc: the thread check is off)
long thread_limit = 1;  // threads that may exist (only the main thread until the kernel is loaded)

FpEnv current_fp_env() {
  FpEnv env;
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("stmxcsr %0" : "=m"(env.mxcsr));
  asm volatile("fnstcw %0" : "=m"(env.x87));
#endif
  return env;
}

// MXCSR: bits 0-5 are sticky exception flags (a kernel may raise them), 6 DAZ, 7-12 the
// exception masks, 13-14 the rounding mode, 15 FTZ. x87 control word: 0-5 masks, 8-9
// precision, 10-11 rounding.
constexpr uint32_t kMxcsrDaz = 1u << 6, kMxcsrMasks = 0x3fu << 7, kMxcsrRounding = 3u << 13,
                   kMxcsrFtz = 1u << 15;
constexpr uint16_t kX87Masks = 0x3f, kX87Precision = 3u << 8, kX87Rounding = 3u << 10;

const char* rounding_name(uint32_t mode) {
  static const char* const names[] = {"to nearest", "down", "up", "toward zero"};
  return names[mode & 3];
}

// What differs between the recorded environment and `now`, or "" when nothing does.
void describe_fp_change(const FpEnv& now, char* out, size_t cap) {
  out[0] = '\0';
  const uint32_t was = recorded.mxcsr, is = now.mxcsr;
  auto bit = [&](uint32_t mask, const char* what) {
    if ((was ^ is) & mask)
      std::snprintf(out, cap, "the kernel left %s %s in MXCSR", what,
                    is & mask ? "set" : "cleared");
  };
  bit(kMxcsrFtz, "flush-to-zero");
  if (out[0]) return;
  bit(kMxcsrDaz, "denormals-are-zero");
  if (out[0]) return;
  if ((was ^ is) & kMxcsrRounding) {
    std::snprintf(out, cap, "the kernel left the SSE rounding mode in MXCSR %s (it was %s)",
                  rounding_name(is >> 13), rounding_name(was >> 13));
  } else if ((was ^ is) & kMxcsrMasks) {
    std::snprintf(out, cap,
                  "the kernel changed the SSE exception masks in MXCSR (0x%x, they were 0x%x)",
                  (is & kMxcsrMasks) >> 7, (was & kMxcsrMasks) >> 7);
  } else if ((recorded.x87 ^ now.x87) & kX87Rounding) {
    std::snprintf(out, cap, "the kernel left the x87 rounding mode %s (it was %s)",
                  rounding_name(now.x87 >> 10), rounding_name(recorded.x87 >> 10));
  } else if ((recorded.x87 ^ now.x87) & (kX87Precision | kX87Masks)) {
    std::snprintf(out, cap,
                  "the kernel changed the x87 control word (precision or exception masks: "
                  "0x%x, it was 0x%x)",
                  now.x87, recorded.x87);
  }
}

// Overwrites a string in place (the process's original argv / environment block).
void wipe(char* s) {
  if (s) std::memset(s, 0, std::strlen(s));
}

}  // namespace

void close_other_fds() {
  if (close_range(proto::kReportFd + 1, ~0u, 0) == 0) return;
  const long max = sysconf(_SC_OPEN_MAX);
  for (long fd = proto::kReportFd + 1; fd < (max > 0 ? max : 1024); ++fd)
    close(static_cast<int>(fd));
}

void open_report_channel(uint64_t nonce) {
  report_nonce = nonce;
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  const uint64_t low = 64, high = std::min<uint64_t>(files.rlim_cur, 1 << 16);
  uint64_t r = 0;
  if (high <= low + 1 || getrandom(&r, sizeof r, 0) != sizeof r) return;
  const int target = static_cast<int>(low + r % (high - low));
  if (dup3(proto::kReportFd, target, O_CLOEXEC) != target) return;
  close(proto::kReportFd);
  report_fd = target;
}

void write_report(proto::ReportStatus status, double seconds, const char* message) {
  char buf[sizeof(proto::Report) + proto::kMaxMessage];
  size_t len = message ? std::strlen(message) : 0;
  if (len > proto::kMaxMessage) len = proto::kMaxMessage;
  proto::Report report{};
  report.magic = proto::kReportMagic;
  report.status = static_cast<uint32_t>(status);
  report.seconds = seconds;
  report.message_len = static_cast<uint32_t>(len);
  report.nonce = report_nonce;
  rusage self{};
  if (getrusage(RUSAGE_SELF, &self) == 0)
    report.cpu_seconds = static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
                         static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
  std::memcpy(buf, &report, sizeof report);
  if (len) std::memcpy(buf + sizeof report, message, len);
  // One write of <= PIPE_BUF bytes is atomic; retry only on EINTR.
  while (write(report_fd, buf, sizeof report + len) < 0 && errno == EINTR) {
  }
}

void report_tampered(const char* message) {
  write_report(proto::ReportStatus::Tampered, 0, message);
  _exit(0);
}

void record_fp_env() { recorded = current_fp_env(); }

namespace {

void check_fp_env(const char* when) {
  const FpEnv now = current_fp_env();
  char message[512];
  if (((now.mxcsr ^ recorded.mxcsr) & ~0x3fu) != 0 || now.x87 != recorded.x87) {
    char what[400];
    describe_fp_change(now, what, sizeof what);
    std::snprintf(message, sizeof message, "%s after %s",
                  what[0] ? what : "the kernel changed the FP environment", when);
    report_tampered(message);
  }
}

}  // namespace

namespace {

// The process's threads now (field 20 of /proc/self/stat); -1 when unknown (no /proc), -2
// when the descriptor no longer reads (the kernel closed or replaced it).
long current_threads() {
  if (thread_stat_fd < 0) return -1;
  char text[1024];
  const ssize_t n = pread(thread_stat_fd, text, sizeof text - 1, 0);
  if (n <= 0) return -2;
  text[n] = '\0';
  const char* p = std::strrchr(text, ')');  // the command name may hold spaces
  if (!p) return -1;
  for (int field = 2; field < 20 && p; ++field) p = std::strchr(p + 1, ' ');
  return p ? std::strtol(p + 1, nullptr, 10) : -1;
}

// libgomp's GOMP_parallel, when the kernel brought libgomp (record_thread_limit).
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
GompParallel gomp_parallel = nullptr;
void empty_region(void*) {}

// Whether all `threads` threads are the main thread and libgomp's pool: a team of that
// size reuses every pool thread and starts one for each thread that is not the pool's,
// so the count grows exactly when some thread is not libgomp's. A kernel may grow the
// pool (a team larger than the default); the pool's threads then become the new limit.
bool only_openmp_threads(long threads) {
  if (!gomp_parallel) return false;
  gomp_parallel(empty_region, nullptr, static_cast<unsigned>(threads), 0);
  return current_threads() <= threads;
}

void check_threads(const char* when) {
  const long threads = current_threads();
  if (threads == -2) {
    char message[200];
    std::snprintf(message, sizeof message,
                  "the runner's /proc/self/stat descriptor no longer reads after %s (the kernel "
                  "closed or replaced it)",
                  when);
    report_tampered(message);
  }
  if (threads < 0 || threads <= thread_limit) return;
  if (only_openmp_threads(threads)) {
    thread_limit = threads;
    return;
  }
  char message[400];
  std::snprintf(message, sizeof message,
                "the kernel left threads running after %s: %ld threads exist, at most %ld may "
                "(the main thread and OpenMP's pool; a thread the kernel starts must end "
                "before it returns)",
                when, threads, thread_limit);
  report_tampered(message);
}

}  // namespace

void open_thread_count() { thread_stat_fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC); }

void record_thread_limit() {
  // Loaded as a dependency of the kernel (RTLD_LOCAL), so looked up by name, not globally.
  if (void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD))
    gomp_parallel = reinterpret_cast<GompParallel>(dlsym(gomp, "GOMP_parallel"));
  if (gomp_parallel) gomp_parallel(empty_region, nullptr, 0, 0);
  thread_limit = std::max(current_threads(), 1L);
}

void check_after_load() {
  check_fp_env("loading it (a static constructor)");
  check_threads("loading it (a static constructor)");
}

void check_after_call(const InputCopy* inputs, size_t n_inputs, uint64_t call) {
  char when[64];
  const FpEnv now = current_fp_env();
  if (((now.mxcsr ^ recorded.mxcsr) & ~0x3fu) != 0 || now.x87 != recorded.x87) {
    std::snprintf(when, sizeof when, "call %llu", static_cast<unsigned long long>(call));
    check_fp_env(when);
  }
  if (thread_stat_fd >= 0) {
    std::snprintf(when, sizeof when, "call %llu", static_cast<unsigned long long>(call));
    check_threads(when);
  }
  char message[512];
  for (size_t i = 0; i < n_inputs; ++i) {
    if (std::memcmp(inputs[i].live, inputs[i].reference, inputs[i].bytes) == 0) continue;
    const auto* a = static_cast<const unsigned char*>(inputs[i].live);
    const auto* b = static_cast<const unsigned char*>(inputs[i].reference);
    uint64_t at = 0;
    while (at < inputs[i].bytes && a[at] == b[at]) ++at;
    std::snprintf(
        message, sizeof message,
        "the kernel changed its read-only input %zu (first at byte %llu) during call %llu", i,
        static_cast<unsigned long long>(at), static_cast<unsigned long long>(call));
    report_tampered(message);
  }
}

void clear_environment(int argc, char** argv) {
  if (const char* options = std::getenv("UBSAN_OPTIONS"))
    std::snprintf(ubsan_copy, sizeof ubsan_copy, "%s", options);
  for (char** e = environ; e && *e; ++e) wipe(*e);
  clearenv();
  for (int i = 0; i < argc; ++i) wipe(argv[i]);
  wipe(reinterpret_cast<char*>(getauxval(AT_EXECFN)));
}

const char* ubsan_options() { return ubsan_copy; }

}  // namespace ollie::runner::child
