// WRONG (NaN mishandling): relu written as `v > 0 ? v : 0` (equivalently std::max(0.f, v)),
// which maps NaN to 0, while the spec's np.maximum(v, 0.0) propagates NaN. A NaN (or an
// inf * 0 = NaN) in the inputs then disappears from the output instead of showing.
// Identical on every finite input, so only the special-values suite (NaN/inf in a, b or
// bias, expected NaN per the spec) catches it.
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
      out0[i * N + j] = v > 0.0f ? v : 0.0f;  // BUG: NaN -> 0
    }
}
