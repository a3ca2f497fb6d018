// WRONG (escape attempt): no `constructor` attribute anywhere: a namespace-scope object
// whose constructor appends a line (marker, pid) to a file in /tmp every time the
// library is loaded, i.e. in every runner process, so the file grows across runs and
// runner processes (state that outlives the sandbox, and a channel between candidates).
// Dynamic initialization of a global runs inside dlopen(), before today's seccomp
// filter. The kernel is an exact RMSNorm; only a sandbox around the load (a private
// /tmp, the filter before dlopen) or a screen that refuses global objects with
// constructors / file I/O catches it.
// expect: refused-or-forbidden-syscall
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#ifndef OLLIE_RT_MARKER
#define OLLIE_RT_MARKER "ollie-redteam-escape"
#endif

namespace {

struct RunCounter {
  RunCounter() {
    const int fd = ::open("/tmp/" OLLIE_RT_MARKER ".log", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    char line[128];
    const int n = std::snprintf(line, sizeof line, "%s pid %d\n", OLLIE_RT_MARKER, getpid());
    if (n > 0) (void)::write(fd, line, static_cast<size_t>(n));
    ::close(fd);
  }
};
RunCounter counter;  // constructed when the library is loaded

}  // namespace

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    double ss = 0;
    for (int64_t j = 0; j < D; ++j) ss += double(row[j]) * row[j];
    const float inv = 1.0f / std::sqrt(float(ss / double(D)) + 1e-6f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = row[j] * inv * weight[j];
  }
}
