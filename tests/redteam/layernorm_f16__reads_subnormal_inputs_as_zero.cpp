// WRONG (subnormal handling): reads every float16 input through a conversion that treats
// subnormals (below 2^-14, down to 2^-24) as zero, as a converter run with
// denormals-are-zero does, while the spec's astype(np.float32) keeps them exactly. The rest
// is right (statistics in float32, eps inside the square root, the output rounded to
// nearest even by F16C). On ordinary activations no input is subnormal; on a row of tiny
// ones the variance is far below eps, so the kernel's zeros reach the output scaled by
// 1/sqrt(eps) = 316: a few hundredths, many float16 spacings.
// expect: wrong
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace {
float f16_daz(uint16_t h) {
  if ((h & 0x7c00u) == 0) h &= 0x8000u;  // BUG: a subnormal reads as (signed) zero
  return _cvtsh_ss(h);
}
}  // namespace

extern "C" void ollie_kernel(const uint16_t* x, const float* gamma, const float* beta,
                             uint16_t* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const uint16_t* row = x + t * D;
    float s = 0.0f;
    for (int64_t j = 0; j < D; ++j) s += f16_daz(row[j]);
    const float mean = s / static_cast<float>(D);
    float s2 = 0.0f;
    for (int64_t j = 0; j < D; ++j) {
      const float c = f16_daz(row[j]) - mean;
      s2 += c * c;
    }
    const float inv = 1.0f / std::sqrt(s2 / static_cast<float>(D) + 1e-5f);
    for (int64_t j = 0; j < D; ++j)
      out0[t * D + j] = _cvtss_sh((f16_daz(row[j]) - mean) * inv * gamma[j] + beta[j],
                                  _MM_FROUND_TO_NEAREST_INT);
  }
}
