// WRONG: one reduction term dropped: the k loop stops at K - 1 (`k < K - 1`, a
// half-remembered "last iteration is peeled" that was never peeled). Each output misses
// one of 512 products: a relative error of ~1/sqrt(512) on random data, which some
// statistical checkers (mean error, cosine similarity > 0.99) accept. The integer-exact
// suite (small integer inputs, bit-exact in any order) and the float bound both catch it.
// expect: wrong
#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K - 1; ++k) acc += a[i * K + k] * b[k * N + j];  // BUG: K - 1
      out0[i * N + j] = acc;
    }
}
