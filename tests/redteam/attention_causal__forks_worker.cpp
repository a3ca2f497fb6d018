// WRONG (escape attempt): fork()s a worker process to "compute in parallel" (or to
// survive the runner's time limit, or exec a helper). The parent then computes the
// answer itself, so the output is right; but creating a process is forbidden in the
// sandbox (glibc's fork is clone without CLONE_THREAD: seccomp kills the runner),
// verdict forbidden-syscall.
// expect: forbidden-syscall-or-refused
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  const pid_t pid = fork();
  if (pid == 0) _exit(0);  // the "worker"
  if (pid > 0) waitpid(pid, nullptr, 0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> p(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; ++i) {
    float mx = -1e30f;
    for (int64_t j = 0; j <= i; ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
      p[static_cast<size_t>(j)] = dot * scale;
      mx = std::fmax(mx, p[static_cast<size_t>(j)]);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j <= i; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0.0f;
      for (int64_t j = 0; j <= i; ++j) acc += p[static_cast<size_t>(j)] * v[j * D + d];
      out0[i * D + d] = acc / sum;
    }
  }
}
