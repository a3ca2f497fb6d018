// Correct matmul_bias_relu (examples/matmul_bias_relu.py): OpenMP over rows, i-k-j loop
// order (a row of the output accumulates a[i][k] * b[k][:] with std::fma, so every
// element's sum is in k order but fused-multiply-added), and the bias add and relu fused
// into one epilogue pass over the row while it is hot. The relu is NaN-propagating like
// np.maximum: (v > 0 || v != v) ? v : 0.
// level: full
// expect: pass
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, const float* bias, float* out0,
                             const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < M; ++i) {
    float* o = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) o[j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float av = a[i * K + k];
      const float* brow = b + k * N;
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) o[j] = std::fma(av, brow[j], o[j]);
    }
#pragma omp simd
    for (int64_t j = 0; j < N; ++j) {
      const float v = o[j] + bias[j];
      o[j] = (v > 0.0f || v != v) ? v : 0.0f;
    }
  }
}
