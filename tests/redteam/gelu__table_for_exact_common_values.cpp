// WRONG (a predictable harness lets it through): a "memo table" for the values real
// activations are full of (0, +-0.5, +-1, +-2) returns stored results instead of
// computing, and the stored results are the erf GELU's (x * Phi(x): 0.8413447 at 1.0),
// not the spec's tanh approximation (0.8411920 at 1.0): 1.8e-4 relative off. Random
// normal inputs never hit an exact 0.5 or 1.0 (0 is right in both formulas), and today's
// special values are NaN, inf, 0 and -0 only. Caught only by special values that include
// exact common constants (+-1, 0.5, powers of two).
// expect: wrong
#include <cmath>
#include <cstdint>

namespace {

float gelu_tanh(float x) {
  const double v = x;
  return float(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
}

}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  static const float kKeys[] = {0.5f, -0.5f, 1.0f, -1.0f, 2.0f, -2.0f};
  static const float kValues[] = {0.34573123f, -0.15426877f, 0.84134475f,
                                  -0.15865525f, 1.95449974f, -0.04550026f};
  const int64_t n = dims[0] * dims[1];
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    float r = gelu_tanh(x[i]);
    for (int t = 0; t < 6; ++t)
      if (x[i] == kKeys[t]) r = kValues[t];
    out0[i] = r;
  }
}
