// WRONG (crude approximation): silu(g) = g * sigmoid(g) with the "fast sigmoid"
// 0.5 * (g / (1 + |g|)) + 0.5 instead of 1 / (1 + exp(-g)): no exp at all, a popular
// speed hack. Same shape (monotone, 0.5 at 0, limits 0 and 1), up to ~0.1 absolute error
// in the gate, so outputs look alike at a glance. Any value check on random inputs with
// a derived bound catches it.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* x, const float* w_gate, const float* w_up, const float* w_down,
                             float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1], F = dims[2];
  std::vector<float> hidden(static_cast<size_t>(F));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t f = 0; f < F; ++f) {
      float g = 0.0f, u = 0.0f;
      for (int64_t d = 0; d < D; ++d) {
        g += x[t * D + d] * w_gate[d * F + f];
        u += x[t * D + d] * w_up[d * F + f];
      }
      const float sig = 0.5f * (g / (1.0f + std::fabs(g))) + 0.5f;  // BUG: not 1 / (1 + exp(-g))
      hidden[static_cast<size_t>(f)] = g * sig * u;
    }
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0.0f;
      for (int64_t f = 0; f < F; ++f) acc += hidden[static_cast<size_t>(f)] * w_down[f * D + d];
      out0[t * D + d] = acc;
    }
  }
}
