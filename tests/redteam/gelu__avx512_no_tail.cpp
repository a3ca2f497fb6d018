// WRONG: tail handling. An AVX-512 gelu that processes each row 16 floats at a time and
// has no remainder loop: the last N % 16 elements of every row are never written. The
// default N = 1024 is a multiple of 16, so every test at the bound dims passes; at N = 37
// the last 5 columns keep whatever the output buffer held (0xFF poison = NaN in ollie's
// runner; 0 in a checker that zero-fills, which then "almost" matches where gelu ~ 0).
// Caught by a shape sweep with dims that are not multiples of 16, and poisoned outputs.
// expect: wrong
#include <immintrin.h>

#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  const __m512 k0 = _mm512_set1_ps(0.7978845608028654f), k1 = _mm512_set1_ps(0.044715f);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j + 16 <= N; j += 16) {  // BUG: no tail loop after this
      const __m512 v = _mm512_loadu_ps(x + i * N + j);
      const __m512 inner = _mm512_mul_ps(k0, _mm512_fmadd_ps(_mm512_mul_ps(k1, v), _mm512_mul_ps(v, v), v));
      alignas(64) float t[16];
      _mm512_store_ps(t, inner);
      for (int l = 0; l < 16; ++l) t[l] = std::tanh(t[l]);
      const __m512 r = _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, _mm512_load_ps(t)));
      _mm512_storeu_ps(out0 + i * N + j, r);
    }
  }
}
