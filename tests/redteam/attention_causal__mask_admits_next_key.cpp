// WRONG (off-by-one in the mask): query i attends to keys 0..i+1 (loop bound `j <= i + 1`,
// clamped to S - 1) instead of 0..i: one future token leaks into every row but the last.
// The last row, the one some spot checks compare, is exactly right, and outputs remain
// plausible convex combinations of v. Any full comparison on random inputs catches it.
// expect: wrong
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> p(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; ++i) {
    const int64_t last = std::min(i + 1, S - 1);  // BUG: should be i
    float mx = -1e30f;
    for (int64_t j = 0; j <= last; ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
      p[static_cast<size_t>(j)] = dot * scale;
      mx = std::fmax(mx, p[static_cast<size_t>(j)]);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j <= last; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0.0f;
      for (int64_t j = 0; j <= last; ++j) acc += p[static_cast<size_t>(j)] * v[j * D + d];
      out0[i * D + d] = acc / sum;
    }
  }
}
