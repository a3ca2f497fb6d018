// WRONG: variance as E[x^2] - E[x]^2 in one float pass (the "textbook" one-pass formula)
// instead of the spec's mean of the squared centred values. Fine for zero-mean,
// unit-variance rows (normal(0, 1) inputs pass), but when the row mean is large compared
// with its spread (x = 1000 + noise, typical for un-normalized activations) the two
// terms cancel catastrophically and the variance, hence every output, is badly wrong or
// even NaN (negative variance). Caught only by an input distribution with a large offset.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float s = 0.0f, s2 = 0.0f;
    for (int64_t j = 0; j < D; ++j) {
      s += row[j];
      s2 += row[j] * row[j];
    }
    const float mean = s / static_cast<float>(D);
    const float var = s2 / static_cast<float>(D) - mean * mean;  // BUG: cancellation
    const float inv = 1.0f / std::sqrt(var + 1e-5f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = (row[j] - mean) * inv * gamma[j] + beta[j];
  }
}
