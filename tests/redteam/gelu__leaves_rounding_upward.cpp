// WRONG (tampering the floating-point environment), hidden behind a function pointer: a
// table of "tuning hooks" holds fesetround, and the kernel calls hook[0](FE_UPWARD)
// before its loop and never restores round-to-nearest. Upward rounding moves each of its
// own results by at most an ulp or two (inside any bound), so the outputs pass; every
// float operation of the caller afterwards rounds upward (sums drift, comparisons with a
// reference fail far from the kernel). Caught by a check of the rounding mode (MXCSR RC
// bits, the x87 control word) after every call (tampered), or by a screen that refuses
// <cfenv> rounding control.
// expect: tampered-or-refused
#include <cfenv>
#include <cmath>
#include <cstdint>

namespace {
int (*const hooks[])(int) = {std::fesetround};
const int kMode = FE_UPWARD;
}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  hooks[0](kMode);
  const int64_t n = dims[0] * dims[1];
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out0[i] = float(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
  }
}
