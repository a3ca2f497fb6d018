// Correct gelu (examples/gelu.py): the same tanh formula, but tanh itself is computed from
// exp: with a = |z| and e = expm1(-2a), tanh(a) = -e / (2 + e) (exact identity; expm1
// keeps small a accurate, and e -> -1 for large a gives 1, so there is no inf/inf
// overflow), the sign put back with copysign. x^3 as x*x*x, and 0.5*x*(1 + t) in fma form.
// A few ulps from std::tanh; NaN and +-inf follow the spec (gelu(-inf) = -inf * 0 = NaN).
// expect: pass
#include <cmath>
#include <cstdint>

namespace {
inline float tanh_via_exp(float z) {
  const float a = std::fabs(z);
  const float e = std::expm1(-2.0f * a);  // in (-1, 0]
  return std::copysign(-e / (2.0f + e), z);
}
}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
  const float k1 = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float inner = k0 * std::fma(k1 * v, v * v, v);
    const float t = tanh_via_exp(inner);
    const float h = 0.5f * v;
    out0[i] = std::fma(h, t, h);
  }
}
