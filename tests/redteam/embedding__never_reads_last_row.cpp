// WRONG: clamps the row to V - 2 (an off-by-one bound, `row < V - 1`, as a tokenizer's
// vocabulary that forgot its last token would): right for every id but V - 1 and -1, the
// last row, which random ids from a large vocabulary almost never hit. The verifier's
// index draws hold V - 1 and -1 in every run of 8 ids.
// expect: wrong
#include <algorithm>
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const int64_t* ids, const float* wte, const float* wpe,
                             const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], V = dims[1], D = dims[2];
  for (int64_t t = 0; t < T; ++t) {
    const int64_t id = ids[t] < 0 ? ids[t] + V : ids[t];
    const int64_t row = std::min(id, std::max<int64_t>(V - 2, 0));  // BUG: row V - 1 is lost
    float mean = 0.0f;
    for (int64_t d = 0; d < D; ++d) mean += wte[row * D + d] + wpe[t * D + d];
    mean /= static_cast<float>(D);
    float var = 0.0f;
    for (int64_t d = 0; d < D; ++d) {
      const float c = wte[row * D + d] + wpe[t * D + d] - mean;
      var += c * c;
    }
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(D) + 1e-5f);
    for (int64_t d = 0; d < D; ++d)
      out0[t * D + d] = (wte[row * D + d] + wpe[t * D + d] - mean) * inv * gamma[d] + beta[d];
  }
}
