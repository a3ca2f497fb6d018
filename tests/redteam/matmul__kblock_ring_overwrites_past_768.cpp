// WRONG (a predictable harness lets it through): a K-blocked GEMM with blocks of 256
// that keeps its partial products in a ring of three row accumulators ("one block being
// loaded, one being summed, one being drained"). A slot is reset when it is used for the
// first time, and the code decides "first time" by slot == 0 && block == 0... written as
// `block % 3 == 0`: the fourth block (K > 768) lands in slot 0 again and OVERWRITES what
// the first block left there instead of adding to it. Exact for K <= 768, which covers
// the default K = 512 and every K the shape sweep draws today (primes, K/2 + 1 = 257,
// K + 1 = 513). Caught by dims of 2-4x the bound (K = 1024..2048) in the shape sweep.
// expect: wrong
#include <algorithm>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  constexpr int64_t KB = 256;
#pragma omp parallel
  {
    std::vector<float> ring(static_cast<size_t>(3 * N));
#pragma omp for
    for (int64_t i = 0; i < M; ++i) {
      std::fill(ring.begin(), ring.end(), 0.0f);
      for (int64_t k0 = 0, block = 0; k0 < K; k0 += KB, ++block) {
        float* acc = ring.data() + (block % 3) * N;
        if (block % 3 == 0) std::fill(acc, acc + N, 0.0f);  // "first use of the slot"
        for (int64_t k = k0; k < std::min(K, k0 + KB); ++k) {
          const float aik = a[i * K + k];
          for (int64_t j = 0; j < N; ++j) acc[j] += aik * b[k * N + j];
        }
      }
      for (int64_t j = 0; j < N; ++j) out0[i * N + j] = ring[j] + ring[N + j] + ring[2 * N + j];
    }
  }
}
