// WRONG (tampering the floating-point environment), the x87 form: the kernel sets the
// x87 control word to 24-bit (single) precision and round-toward-zero through
// <fpu_control.h>'s _FPU_SETCW (no MXCSR bit changes, so a check of MXCSR alone misses
// it) and leaves it so. The kernel's own math is SSE/AVX and exact; every `long double`
// computation of the caller afterwards (and glibc functions that use the x87 unit) is
// silently truncated. Caught only by a check of the x87 control word after every call
// (tampered), or by a screen that refuses the inline asm the macro expands to.
// expect: tampered-or-refused
#include <fpu_control.h>

#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  fpu_control_t cw = (_FPU_DEFAULT & ~_FPU_EXTENDED & ~_FPU_RC_NEAREST) | _FPU_SINGLE | _FPU_RC_ZERO;
  _FPU_SETCW(cw);
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; ++j) mean += row[j];
    mean /= double(D);
    for (int64_t j = 0; j < D; ++j) var += (row[j] - mean) * (row[j] - mean);
    const double inv = 1.0 / std::sqrt(var / double(D) + 1e-5);
    for (int64_t j = 0; j < D; ++j)
      out0[t * D + j] = float((row[j] - mean) * inv * gamma[j] + beta[j]);
  }
}
