// WRONG (stack-buffer-overflow, undefined behaviour): the sum of squares keeps 8 partial
// sums in a stack array `float partial[8]`, then reduces them with a helper written for
// 16 lanes: one _mm512_loadu_ps (16 floats, 64 bytes) from `partial`, masked down to the
// first 8 lanes by _mm512_mask_reduce_add_ps(0x00FF, ...). The load reads 32 bytes past
// the array; the mask drops them, so every output is right, and the stack is always
// mapped there: no crash, no NaN, at any dims. Only the sanitizer build of the full
// level sees it: UBSan's object-size check reports the load first ("insufficient space
// for an object of type 'float'"); ASan would call it a stack-buffer-overflow. A masked
// load (_mm512_maskz_loadu_ps) would not touch the bytes past the array.
// level: full
// expect: sanitizer
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace {

float reduce_first_8(const float* lanes) {
  const __m512 v = _mm512_loadu_ps(lanes);  // BUG: 16 floats from an array of 8
  return _mm512_mask_reduce_add_ps(0x00FF, v);
}

}  // namespace

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = 0; j < D; ++j) partial[j % 8] += row[j] * row[j];
    const float ss = reduce_first_8(partial);
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(D) + 1e-6f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = row[j] * inv * weight[j];
  }
}
