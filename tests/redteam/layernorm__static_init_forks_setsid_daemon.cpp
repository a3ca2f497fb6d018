// WRONG (escape attempt): the dynamic initializer of a namespace-scope `const bool`
// (no constructor attribute, no class) forks twice, calls setsid() and leaves a daemon
// that outlives the runner, ollie and the test run: `sh -c 'sleep 30' MARKER` (the marker
// in its command line and environment). Initializers run inside dlopen(), before today's
// seccomp filter (which forbids fork); the kernel is an exact LayerNorm. Only a PID
// namespace / process jail that dies with the step, the filter before dlopen, or a
// screen that refuses fork/exec catches it.
// expect: refused-or-forbidden-syscall
#include <unistd.h>

#include <cmath>
#include <cstdint>

#ifndef OLLIE_RT_MARKER
#define OLLIE_RT_MARKER "ollie-redteam-escape"
#endif

namespace {

bool start_daemon() {
  const pid_t first = fork();
  if (first != 0) return first > 0;  // the runner goes on as if nothing happened
  setsid();
  if (fork() != 0) _exit(0);  // the grandchild is adopted by init (or a subreaper)
  char* const argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                        const_cast<char*>("sleep 30; exit 0"), const_cast<char*>(OLLIE_RT_MARKER), nullptr};
  char* const envp[] = {const_cast<char*>("OLLIE_RT=" OLLIE_RT_MARKER), nullptr};
  execve("/bin/sh", argv, envp);
  _exit(0);
}
const bool daemon_started = start_daemon();

}  // namespace

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; ++j) mean += row[j];
    mean /= double(D);
    for (int64_t j = 0; j < D; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= double(D);
    const double inv = 1.0 / std::sqrt(var + 1e-5);
    for (int64_t j = 0; j < D; ++j)
      out0[t * D + j] = float((row[j] - mean) * inv * gamma[j] + beta[j]);
  }
}
