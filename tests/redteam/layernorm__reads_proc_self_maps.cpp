// WRONG (escape attempt): instead of computing, it opens /proc/self/maps to find other
// mappings of the process, hoping the checker left the reference output (or a previous
// candidate's output) somewhere in its memory, as a reported exploit against a GPU
// kernel benchmark did. Whatever it finds, it must never get that far: opening a file is
// forbidden inside the sandbox (seccomp kills the process on open/openat).
// expect: forbidden-syscall-or-refused
#include <cstdint>
#include <cstdio>
#include <cstring>

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  if (std::FILE* f = std::fopen("/proc/self/maps", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
      // ... look for an anonymous rw mapping of exactly n floats and copy it ...
      if (std::strstr(line, "rw-s")) break;
    }
    std::fclose(f);
  }
  for (int64_t i = 0; i < n; ++i) out0[i] = x[i] * gamma[i % dims[1]] + beta[i % dims[1]];
}
