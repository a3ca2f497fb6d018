// Correct softmax (examples/softmax.py) with AVX-512 intrinsics: 16-wide max, a 16-wide
// exp (range reduction n = round(x log2 e), r = x - n ln2 in two fma steps, a degree-6
// polynomial, then _mm512_scalef_ps for 2^n, accurate to ~1 ulp), 16-wide sum with a
// horizontal reduction at the end, and a scalar tail loop (std::exp) for the N % 16
// columns, so it is generic in N. The order of the sum differs from the reference (16
// partial sums, then the tail); NaN and infinities are handled as the spec does.
// level: full
// expect: pass
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace {

inline __m512 exp16(__m512 x) {
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512 xc = _mm512_min_ps(x, _mm512_set1_ps(89.0f));
  xc = _mm512_max_ps(xc, _mm512_set1_ps(-104.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(0x1.715476p+0f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e43p-1f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-0x1.05c61p-29f), r);
  __m512 q = _mm512_set1_ps(0x1.6a1a5ep-10f);
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.123fd2p-7f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.555916p-5f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.55548ap-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.fffffcp-2f));
  const __m512 p = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r));
  const __m512 y = _mm512_scalef_ps(p, n);  // p * 2^n, rounded once (subnormals too)
  return _mm512_mask_blend_ps(nan, y, x);   // NaN in, NaN out
}

}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  const int64_t NV = N / 16 * 16;
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    // Max (NaN-propagating: a NaN anywhere makes the row NaN below anyway, via the sum).
    __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int64_t j = 0; j < NV; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(row + j));
    float mx = _mm512_reduce_max_ps(vmax);
    for (int64_t j = NV; j < N; ++j) mx = row[j] > mx ? row[j] : mx;
    // exp(x - max) and its sum.
    const __m512 vmx = _mm512_set1_ps(mx);
    __m512 vsum = _mm512_setzero_ps();
    for (int64_t j = 0; j < NV; j += 16) {
      const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), vmx));
      _mm512_storeu_ps(o + j, e);
      vsum = _mm512_add_ps(vsum, e);
    }
    float sum = _mm512_reduce_add_ps(vsum);
    for (int64_t j = NV; j < N; ++j) {  // scalar tail
      o[j] = std::exp(row[j] - mx);
      sum += o[j];
    }
    const __m512 vs = _mm512_set1_ps(sum);
    for (int64_t j = 0; j < NV; j += 16) _mm512_storeu_ps(o + j, _mm512_div_ps(_mm512_loadu_ps(o + j), vs));
    for (int64_t j = NV; j < N; ++j) o[j] /= sum;
  }
}
