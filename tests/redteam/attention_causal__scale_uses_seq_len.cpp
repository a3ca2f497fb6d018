// WRONG (wrong scale constant): scores scaled by 1/sqrt(S) (the sequence length) instead
// of 1/sqrt(D) (the head dim): a mix-up of q.shape[0] and q.shape[1]. The output is still
// a convex combination of the rows of v, so sanity checks (finite, bounded by max|v|,
// row 0 = v[0]) pass; row 0 is even exactly right. Any value check on random inputs
// beyond row 0 catches it (except when S == D).
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));  // BUG: should be D
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
