// WRONG (a zero-skipping epilogue): an output whose accumulator is exactly 0.0 is taken
// for padding (an all-zero row or column) and written as 0 without the epilogue, as if
// relu(0 + bias) were 0. It is relu(bias), which is bias[j] whenever bias[j] > 0.
// Exact on every other element, NaN-propagating like np.maximum. With float inputs an
// accumulator of 512 (or 257, or 5) products is never exactly zero, so every float suite
// passes it; with integer inputs in {-1, 0, 1} many sums cancel to exactly 0, and the
// integer-exact suite (bit for bit) rejects it.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, const float* bias, float* out0,
                             const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      if (acc == 0.0f) {  // BUG: "nothing accumulated": the bias is skipped too
        out0[i * N + j] = 0.0f;
        continue;
      }
      const float v = acc + bias[j];
      out0[i * N + j] = std::isnan(v) ? v : (v > 0.0f ? v : 0.0f);
    }
}
