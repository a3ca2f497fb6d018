// Correct matmul (examples/matmul.py) with cache blocking: the K axis is split into
// blocks of 96 and N into blocks of 64; each B tile is packed TRANSPOSED into a local
// buffer (bt[j][k] = b[k][j]) so the inner loop is a contiguous dot product of a row of A
// with a row of bt, and each output accumulates one partial dot product per K block (the
// sum is reordered: block partial sums, each summed in k order). Edge tiles use the
// remaining sizes, so any M, K, N works.
// expect: pass
#include <algorithm>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  constexpr int64_t KB = 96, NB = 64;
  std::fill(out0, out0 + M * N, 0.0f);
  std::vector<float> bt(static_cast<size_t>(KB * NB));
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    const int64_t kb = std::min(KB, K - k0);
    for (int64_t j0 = 0; j0 < N; j0 += NB) {
      const int64_t nb = std::min(NB, N - j0);
      for (int64_t k = 0; k < kb; ++k)
        for (int64_t j = 0; j < nb; ++j) bt[static_cast<size_t>(j * kb + k)] = b[(k0 + k) * N + j0 + j];
      for (int64_t i = 0; i < M; ++i) {
        const float* arow = a + i * K + k0;
        for (int64_t j = 0; j < nb; ++j) {
          const float* btrow = bt.data() + j * kb;
          float acc = 0.0f;
          for (int64_t k = 0; k < kb; ++k) acc += arow[k] * btrow[k];
          out0[i * N + j0 + j] += acc;
        }
      }
    }
  }
}
