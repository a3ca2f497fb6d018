// A red-team kernel: computes nothing and tries to read a file instead (the sandbox
// kills it: kernels may not open files).
#include <cstdint>
#include <cstdio>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  if (std::FILE* f = std::fopen("/etc/passwd", "r")) {
    out0[0] = static_cast<float>(std::fgetc(f));
    std::fclose(f);
  }
  (void)x;
  (void)dims;
}
