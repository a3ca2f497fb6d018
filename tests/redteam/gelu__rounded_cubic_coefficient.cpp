// WRONG (wrong constant): the cubic coefficient 0.044715 rounded to 0.0447 ("3 significant
// digits is plenty"). The result differs from the spec by up to ~2e-4 relative around
// |x| ~ 2-3, so rtol=1e-3 checkers and eyeballing accept it; the derived per-element
// bound of a double-precision reference rejects it on normal(0, 1) inputs.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float inner = 0.7978845608028654f * (v + 0.0447f * v * v * v);  // BUG: 0.044715
    out0[i] = 0.5f * v * (1.0f + std::tanh(inner));
  }
}
