// WRONG: does not compile. Uses the AVX-512 reduce intrinsic with the wrong vector type
// (a __m256 passed to _mm512_reduce_max_ps) and an undeclared helper, the kind of error
// a language model makes when mixing vector widths. The verdict must be compile-error
// with the compiler's message, not a crash of ollie.
// expect: compile-error
#include <immintrin.h>

#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  for (int64_t i = 0; i < M; ++i) {
    __m256 v = _mm256_loadu_ps(x + i * N);
    float mx = _mm512_reduce_max_ps(v);
    exp_row_avx512(x + i * N, out0 + i * N, N, mx);
  }
}
