// WRONG (overflow): tanh(z) computed as (e^{2z} - 1) / (e^{2z} + 1). Accurate enough for
// moderate z, but for z > ~44 (x > ~10) e^{2z} overflows to inf and inf/inf = NaN, and
// for small |z| the subtraction cancels (relative error grows like eps/|z|, harmless here
// because 1 + tanh ~ 1). normal(0, 1) inputs never reach |x| = 10, so a checker that only
// draws them passes it. Caught by large-magnitude inputs (and +inf in special values).
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    const float e = std::exp(2.0f * inner);
    const float t = (e - 1.0f) / (e + 1.0f);  // BUG: NaN once e overflows
    out0[i] = 0.5f * v * (1.0f + t);
  }
}
