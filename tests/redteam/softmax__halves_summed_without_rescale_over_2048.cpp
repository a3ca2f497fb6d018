// WRONG (a predictable harness lets it through): rows longer than 2048 are split into
// two halves reduced independently ("two streams"): each half finds its own max and
// sums exp(x - own max); the halves' sums are then simply added, without rescaling each
// by exp(own max - row max), and the outputs use the row max. Exact for N <= 2048 (one
// stream), which covers the default N = 1024 and every N today's shape sweep draws (5,
// 513, 1025). Caught only by dims of 2-4x the bound (N > 2048).
// expect: wrong
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

void half_stats(const float* x, int64_t n, float& mx, float& sum) {
  mx = x[0];
  for (int64_t j = 1; j < n; ++j) mx = std::fmax(mx, x[j]);
  sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(x[j] - mx);
}

}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float mx, sum;
    if (N <= 2048) {
      half_stats(row, N, mx, sum);
    } else {
      const int64_t h = N / 2;
      float m1, s1, m2, s2;
      half_stats(row, h, m1, s1);
      half_stats(row + h, N - h, m2, s2);
      mx = std::fmax(m1, m2);
      sum = s1 + s2;  // missing: s1 * exp(m1 - mx) + s2 * exp(m2 - mx)
    }
    for (int64_t j = 0; j < N; ++j) out0[i * N + j] = std::exp(row[j] - mx) / sum;
  }
}
