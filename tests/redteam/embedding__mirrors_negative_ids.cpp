// WRONG: maps a negative id i to row -i - 1 (a mirror) instead of numpy's i + V: right for
// every id >= 0, in bounds for every id in [-V, V), wrong only for negative ids. Inputs
// drawn from [0, V) (or from a small range around 0 where -1 -> 0 happens to be close)
// never show it; the verifier's index draws hold -V and -1 in every run of 8 ids.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const int64_t* ids, const float* wte, const float* wpe,
                             const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[2];
  for (int64_t t = 0; t < T; ++t) {
    const int64_t id = ids[t];
    const int64_t row = id < 0 ? -id - 1 : id;  // BUG: numpy's row is id + V
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
