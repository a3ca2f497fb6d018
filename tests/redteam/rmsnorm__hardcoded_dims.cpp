// WRONG (claims generic, is specialized): reads T and D from `dims` (so it looks generic),
// but the inner loops are written for the bound sizes: constexpr D = 1024 for the
// reduction and the row stride, the dims value used only for the row count. At the
// default dims (T=128, D=1024) it is exactly right; at any other D it reads the wrong
// elements, runs past the end of x (guard page: crash) or leaves elements unwritten.
// Caught only by the shape sweep that a kernel declared generic must pass.
// expect: wrong-or-crash
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  const int64_t T = dims[0];
  constexpr int64_t D = 1024;  // BUG: should be dims[1]
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t j = 0; j < D; ++j) ss += row[j] * row[j];
    const float denom = std::sqrt(ss / static_cast<float>(D) + 1e-6f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = row[j] / denom * weight[j];
  }
}
