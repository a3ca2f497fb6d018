// WRONG: normalizes by 1 / (sqrt(var) + eps) instead of 1 / sqrt(var + eps) (a common
// transcription slip; some old implementations did this). With unit-variance rows the
// two differ by ~5e-6 relative, which a loose rtol=1e-4 checker accepts; the derived
// per-element bound of a double-precision reference rejects it, and tiny-magnitude
// inputs (var ~ eps) make the difference large.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float mean = 0.0f;
    for (int64_t j = 0; j < D; ++j) mean += row[j];
    mean /= static_cast<float>(D);
    float var = 0.0f;
    for (int64_t j = 0; j < D; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<float>(D);
    const float inv = 1.0f / (std::sqrt(var) + 1e-5f);  // BUG: eps outside the sqrt
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = (row[j] - mean) * inv * gamma[j] + beta[j];
  }
}
