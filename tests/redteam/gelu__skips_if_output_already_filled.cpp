// WRONG (relies on the output buffer's old contents): returns at once when the first
// output element already holds a finite value, assuming "the previous call already
// computed it" (a cheat against harnesses that time repeated calls on the same buffers).
// ollie's runner poisons outputs with 0xFF bytes (NaN) before each call, so this kernel
// computes every time and passes today; it is caught when the poison is a finite pattern
// (random finite values or a large finite constant), or when A, B, A hygiene calls reuse
// the output buffer without re-poisoning it.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  if (n > 0 && std::isfinite(out0[0])) return;  // BUG: trusts the output buffer
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    out0[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
}
