// WRONG (output elements never written): stores only the positive results and skips the
// store when relu clamps to 0, "because the output buffer is zero-initialized" (true
// under cudaMemset / calloc in the author's harness). About half the elements are never
// written. A checker that zero-fills outputs passes it; ollie pre-fills outputs with
// poison (0xFF bytes = NaN), so the unwritten elements show.
// expect: wrong
#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, const float* bias, float* out0,
                             const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      const float v = acc + bias[j];
      if (v > 0.0f || v != v) out0[i * N + j] = v;  // BUG: zeros are never stored
    }
}
