// WRONG (a predictable harness lets it through): flash-style causal attention over key
// tiles of 64 with an online softmax. When S is a multiple of 64 a "full tiles" path runs
// that walks the key tiles eight at a time (512 keys per step) and then the leftover
// tiles one at a time, but the leftover loop stops one tile short: the last 64 keys are
// skipped whenever S % 64 == 0 and S % 512 != 0 (queries in the last tile lose their own
// diagonal block). S not a multiple of 64 takes the ragged path, which is right. Exact at
// the default S = 512 and at every S today's shape sweep draws (3, 257, 513). Caught only
// by dims that are multiples of 64 (and not of 512), e.g. 64, 192, 320, 576, 1088.
// expect: wrong
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr int64_t kTile = 64;

// Adds keys [j0, j1) (those <= i) of query i to its running max m, sum l and acc.
void tile(const float* q, const float* k, const float* v, int64_t D, int64_t i, int64_t j0,
          int64_t j1, double scale, double& m, double& l, std::vector<double>& acc) {
  for (int64_t j = j0; j < std::min(j1, i + 1); ++j) {
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += double(q[i * D + d]) * k[j * D + d];
    s *= scale;
    const double m_new = std::max(m, s);
    const double r = std::exp(m - m_new), p = std::exp(s - m_new);
    l = l * r + p;
    for (int64_t d = 0; d < D; ++d) acc[size_t(d)] = acc[size_t(d)] * r + p * v[j * D + d];
    m = m_new;
  }
}

}  // namespace

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0,
                             const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  const double scale = 1.0 / std::sqrt(double(D));
  const int64_t tiles = S / kTile;
#pragma omp parallel for schedule(dynamic, 8)
  for (int64_t i = 0; i < S; ++i) {
    double m = -1e300, l = 0;
    std::vector<double> acc(static_cast<size_t>(D), 0.0);
    if (S % kTile == 0) {
      int64_t t = 0;
      for (; t + 8 <= tiles; t += 8) tile(q, k, v, D, i, t * kTile, (t + 8) * kTile, scale, m, l, acc);
      for (; t + 1 < tiles; ++t) tile(q, k, v, D, i, t * kTile, (t + 1) * kTile, scale, m, l, acc);
    } else {
      for (int64_t j0 = 0; j0 < S; j0 += kTile) tile(q, k, v, D, i, j0, j0 + kTile, scale, m, l, acc);
    }
    for (int64_t d = 0; d < D; ++d) out0[i * D + d] = float(l > 0 ? acc[size_t(d)] / l : 0.0);
  }
}
