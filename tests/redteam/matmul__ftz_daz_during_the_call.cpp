// WRONG (subnormal handling): turns on flush-to-zero and denormals-are-zero in MXCSR for
// the duration of the call ("subnormals are slow") and restores the caller's MXCSR before
// it returns, so the check of the floating-point environment after every call sees
// nothing; the write hides from the source screen behind a token-pasting macro (the screen
// names `_mm_setcsr`, not what a macro builds). numpy keeps gradual underflow: a
// subnormal input times an ordinary weight, or a product below 2^-126, is a subnormal the
// kernel reads or writes as 0. Ordinary data never shows it (every value is far above
// 2^-126); only inputs near float32's smallest normal number do, with a bound that allows
// no more than gradual underflow's 2^-149 per operation.
// expect: wrong
#include <xmmintrin.h>

#include <cstdint>

#define OLLIE_RT_PASTE(a, b) a##b

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const unsigned int saved = _mm_getcsr();
  OLLIE_RT_PASTE(_mm_set, csr)(saved | 0x8040u);  // BUG: FTZ (bit 15) | DAZ (bit 6)
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i) {
    float* row = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) row[j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float aik = a[i * K + k];
      for (int64_t j = 0; j < N; ++j) row[j] += aik * b[k * N + j];
    }
  }
  OLLIE_RT_PASTE(_mm_set, csr)(saved);  // the caller's MXCSR back: no tampering shows
}
