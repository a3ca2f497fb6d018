// Correct matmul (examples/matmul.py) with AVX-512 intrinsics: a 4 x 32 register-blocked
// microkernel (8 zmm accumulators, _mm512_fmadd_ps, B rows broadcast-free: a[i][k] is
// broadcast, two 16-wide vectors of b[k][j..j+31] are loaded), parallel over row blocks
// with OpenMP. Columns past the last multiple of 32 go through masked loads/stores
// (_mm512_maskz_loadu_ps / _mm512_mask_storeu_ps), and rows past the last multiple of 4
// through a scalar fma loop, so the kernel is generic. FMA rounds once per term, unlike
// the reference's multiply-then-add.
// level: full
// expect: pass
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace {

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

}  // namespace

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  const int64_t M4 = M / 4 * 4;
#pragma omp parallel for schedule(static)
  for (int64_t i0 = 0; i0 < M4; i0 += 4) {
    for (int64_t j0 = 0; j0 < N; j0 += 32) {
      const __mmask16 m0 = tail_mask(N - j0);
      const __mmask16 m1 = N - j0 > 16 ? tail_mask(N - j0 - 16) : static_cast<__mmask16>(0);
      __m512 c[4][2];
      for (int r = 0; r < 4; ++r) c[r][0] = c[r][1] = _mm512_setzero_ps();
      for (int64_t k = 0; k < K; ++k) {
        const float* brow = b + k * N + j0;
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, brow);
        const __m512 b1 = _mm512_maskz_loadu_ps(m1, brow + 16);
        for (int r = 0; r < 4; ++r) {
          const __m512 av = _mm512_set1_ps(a[(i0 + r) * K + k]);
          c[r][0] = _mm512_fmadd_ps(av, b0, c[r][0]);
          c[r][1] = _mm512_fmadd_ps(av, b1, c[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r) {
        _mm512_mask_storeu_ps(out0 + (i0 + r) * N + j0, m0, c[r][0]);
        _mm512_mask_storeu_ps(out0 + (i0 + r) * N + j0 + 16, m1, c[r][1]);
      }
    }
  }
  // Scalar tail: the last M % 4 rows.
  for (int64_t i = M4; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(a[i * K + k], b[k * N + j], acc);
      out0[i * N + j] = acc;
    }
}
