// WRONG (tampering the floating-point environment): the kernel turns on flush-to-zero
// and denormals-are-zero in MXCSR (`_mm_setcsr`, "subnormals are slow") and never turns
// them off. Its own outputs are exact for normal inputs; the damage is to the caller:
// every float operation of the program after the call flushes subnormals to zero (a
// model's small gradients, a reference implementation the user compares with). No output
// check sees it; caught by the screen (it refuses `_mm_setcsr`: refused) and, where a
// kernel hides the write from it, by the check of MXCSR after every call (tampered).
// expect: tampered-or-refused
#include <xmmintrin.h>

#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0,
                             const int64_t* dims) {
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) | DAZ (bit 6), left on
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    double ss = 0;
    for (int64_t j = 0; j < D; ++j) ss += double(row[j]) * row[j];
    const float inv = 1.0f / std::sqrt(float(ss / double(D)) + 1e-6f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = row[j] * inv * weight[j];
  }
}
