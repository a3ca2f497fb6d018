// WRONG (a predictable harness lets it through): causal attention whose keys are walked
// in tiles of 64. When S is a multiple of 64 a "full tiles" path runs: eight tiles (512
// keys) per step, then the leftover tiles one at a time, but the leftover loop stops one
// tile short, so the last 64 keys are skipped whenever S % 64 == 0 and S % 512 != 0
// (queries in the last tile lose their own diagonal block). Other S take the ragged path,
// which covers every key. Each row is otherwise the spec's own computation (NaN and inf
// behave as in numpy). Exact at the default S = 512 and at every S today's shape sweep
// draws (3, 257, 513). Caught only by S a multiple of 64 but not of 512 (64, 192, 320,
// 576, 1088, ...).
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr int64_t kTile = 64;

// Row i of the spec, literally: scores of keys [j0, j1) (masked ones -1e30), their max
// (NaN if any score is NaN), exp, sum, then p @ v over the same keys (a masked key's
// p = 0 still meets v: 0 * inf = NaN, as in numpy).
void attend_row(const float* q, const float* k, const float* v, float* out, int64_t D, int64_t i,
                int64_t j0, int64_t j1, std::vector<double>& p) {
  const double scale = 1.0 / std::sqrt(double(D));
  double mx = -HUGE_VAL;
  for (int64_t j = j0; j < j1; ++j) {
    double s = -1e30;
    if (j <= i) {
      s = 0;
      for (int64_t d = 0; d < D; ++d) s += double(q[i * D + d]) * k[j * D + d];
      s *= scale;
    }
    p[size_t(j)] = s;
    mx = (s > mx || s != s || mx != mx) ? (mx != mx ? mx : s) : mx;
  }
  double sum = 0;
  for (int64_t j = j0; j < j1; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
  for (int64_t d = 0; d < D; ++d) {
    double acc = 0;
    for (int64_t j = j0; j < j1; ++j) acc += p[size_t(j)] * v[j * D + d];
    out[i * D + d] = float(acc / sum);
  }
}

}  // namespace

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0,
                             const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  int64_t keys = S;  // the keys the tile walk covers
  if (S % kTile == 0) {
    const int64_t tiles = S / kTile;
    int64_t t = 0;
    for (; t + 8 <= tiles; t += 8) keys = (t + 8) * kTile;
    if (t < tiles) keys = t * kTile;
    for (; t + 1 < tiles; ++t) keys = (t + 1) * kTile;  // stops one tile short
  }
#pragma omp parallel
  {
    std::vector<double> p(static_cast<size_t>(S));
#pragma omp for schedule(dynamic, 8)
    for (int64_t i = 0; i < S; ++i) attend_row(q, k, v, out0, D, i, 0, keys, p);
  }
}
