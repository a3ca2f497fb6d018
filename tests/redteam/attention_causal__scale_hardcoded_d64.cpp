// WRONG (claims generic, scale specialized): multiplies the scores by 0.125f, which is
// 1/sqrt(D) only for D = 64, the bound head dim; everything else reads dims. Exactly
// right at the default dims (S=512, D=64), wrong at every other D. Caught only by the
// shape sweep of a kernel that declares itself generic.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  const float scale = 0.125f;  // BUG: 1/sqrt(64), not 1/sqrt(D)
  std::vector<float> p(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; ++i) {
    float mx = -1e30f;
    for (int64_t j = 0; j <= i; ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
      p[static_cast<size_t>(j)] = dot * scale;
      mx = std::fmax(mx, p[static_cast<size_t>(j)]);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j <= i; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0.0f;
      for (int64_t j = 0; j <= i; ++j) acc += p[static_cast<size_t>(j)] * v[j * D + d];
      out0[i * D + d] = acc / sum;
    }
  }
}
