// WRONG (special values): "sanitizes" the input with fmin(fmax(x, -FLT_MAX), FLT_MAX)
// to avoid inf/NaN in the polynomial. fmax drops NaN (fmax(NaN, y) = y), so gelu(NaN)
// comes out as gelu(-FLT_MAX) = -0 instead of NaN, gelu(+inf) as FLT_MAX instead of
// +inf, and gelu(-inf) as -0 instead of the spec's NaN (-inf * 0). On every finite input
// it is exactly right, so only the special-values suite (NaN/+-inf inputs, compared
// with the spec's NaN/Inf propagation) catches it.
// expect: wrong
#include <cfloat>
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::fmin(std::fmax(x[i], -FLT_MAX), FLT_MAX);  // BUG: hides NaN and inf
    const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    out0[i] = 0.5f * v * (1.0f + std::tanh(inner));
  }
}
