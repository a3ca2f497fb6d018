// WRONG: uses the AVX-512 approximate reciprocal square root _mm512_rsqrt14_ps (relative
// error up to 2^-14) for 1/sqrt(ms + eps) and skips the Newton-Raphson refinement step
// that makes it float-accurate. Errors of ~6e-5 relative pass rtol=1e-4 checkers and
// "looks the same" eyeballing; a double-precision reference with a derived bound rejects
// it on ordinary inputs (a silent precision downgrade).
// expect: wrong
#include <immintrin.h>

#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float ss = 0.0f;
    for (int64_t j = 0; j < D; ++j) ss += row[j] * row[j];
    const __m128 v = _mm_set_ss(ss / static_cast<float>(D) + 1e-6f);
    const float r = _mm_cvtss_f32(_mm_rsqrt14_ss(v, v));  // BUG: ~14-bit accurate, no refinement
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = row[j] * r * weight[j];
  }
}
