// Correct layernorm (examples/layernorm.py) using Welford's algorithm: one pass gives the
// mean and M2 = sum (x - mean)^2 with the running update (delta, mean += delta / n,
// M2 += delta * (x - mean)), then a second pass normalizes. The spec computes the mean,
// then the variance of the centred values (two separate reductions); Welford gets the
// same numbers with different rounding and without catastrophic cancellation.
// expect: pass
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  constexpr float kEps = 1e-5f;
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float mean = 0.0f, m2 = 0.0f;
    for (int64_t j = 0; j < D; ++j) {
      const float delta = row[j] - mean;
      mean += delta / static_cast<float>(j + 1);
      m2 += delta * (row[j] - mean);
    }
    const float var = m2 / static_cast<float>(D);
    const float inv = 1.0f / std::sqrt(var + kEps);
    float* o = out0 + t * D;
    for (int64_t j = 0; j < D; ++j) o[j] = (row[j] - mean) * inv * gamma[j] + beta[j];
  }
}
