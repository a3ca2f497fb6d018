// WRONG (tail handling): the hidden dimension F is processed in blocks of 64 (a tile that
// fits the L1 cache) and the loop runs over F / 64 whole blocks only: the last F % 64
// hidden units never contribute to the down projection. F = 1024 at the default dims, a
// multiple of 64, so fixed-size tests pass; the shape sweep (F = 37, 100, ...) catches it.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* x, const float* w_gate, const float* w_up, const float* w_down,
                             float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1], F = dims[2];
  constexpr int64_t FB = 64;
  std::vector<float> h(FB);
  for (int64_t t = 0; t < T; ++t) {
    float* o = out0 + t * D;
    for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
    for (int64_t fb = 0; fb < F / FB; ++fb) {  // BUG: the F % 64 tail is skipped
      for (int64_t f = 0; f < FB; ++f) {
        float g = 0.0f, u = 0.0f;
        for (int64_t d = 0; d < D; ++d) {
          g += x[t * D + d] * w_gate[d * F + fb * FB + f];
          u += x[t * D + d] * w_up[d * F + fb * FB + f];
        }
        h[static_cast<size_t>(f)] = g / (1.0f + std::exp(-g)) * u;
      }
      for (int64_t f = 0; f < FB; ++f)
        for (int64_t d = 0; d < D; ++d) o[d] += h[static_cast<size_t>(f)] * w_down[(fb * FB + f) * D + d];
    }
  }
}
