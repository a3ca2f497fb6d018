// WRONG (a loose bound lets it through): full blocks of 16 elements take a "vector"
// path that computes the erf GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), instead of
// the spec's tanh approximation; only the N % 16 tail of each row uses the tanh formula.
// The two formulas differ by up to ~1e-3 relative (4.7e-4 absolute near |x| = 2), far
// more than float rounding (hundreds of times numpy's own error), yet inside a bound that
// is derived loosely around tanh at large dims. At the default N = 1024 every element is
// in a block. Caught by a bound tight enough that a formula differing from the spec's by
// 1e-4 fails, at every dims the sweep draws.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  const int64_t blocked = N / 16 * 16;
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    for (int64_t j = 0; j < blocked; ++j)
      o[j] = 0.5f * row[j] * (1.0f + std::erf(row[j] * 0.70710678f));
    for (int64_t j = blocked; j < N; ++j) {
      const double v = row[j];
      o[j] = float(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
    }
  }
}
