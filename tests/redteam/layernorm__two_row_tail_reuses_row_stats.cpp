// WRONG (a predictable harness lets it through): rows are normalized four at a time
// (statistics of four rows computed together), then a tail: three rows, one row, or two
// rows. The two-row tail computes the statistics of its first row and reuses them for
// the second ("the two rows share a cache line pair"). Exact whenever T % 4 is 0, 1 or 3:
// the default T = 128 and every T today's shape sweep draws (3, 65, 129). Caught only by
// dims with T % 4 == 2 (a harness that covers every remainder mod 4 over its suites).
// expect: wrong
#include <cmath>
#include <cstdint>

namespace {

struct Stats {
  double mean, inv;
};

Stats stats(const float* row, int64_t D) {
  double mean = 0, var = 0;
  for (int64_t j = 0; j < D; ++j) mean += row[j];
  mean /= double(D);
  for (int64_t j = 0; j < D; ++j) var += (row[j] - mean) * (row[j] - mean);
  return {mean, 1.0 / std::sqrt(var / double(D) + 1e-5)};
}

void apply(const float* row, const Stats& s, const float* gamma, const float* beta, float* out,
           int64_t D) {
  for (int64_t j = 0; j < D; ++j) out[j] = float((row[j] - s.mean) * s.inv * gamma[j] + beta[j]);
}

}  // namespace

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  int64_t t = 0;
#pragma omp parallel for
  for (int64_t g = 0; g < T / 4; ++g)
    for (int64_t r = 4 * g; r < 4 * g + 4; ++r)
      apply(x + r * D, stats(x + r * D, D), gamma, beta, out0 + r * D, D);
  t = T / 4 * 4;
  switch (T - t) {
    case 3:
      apply(x + (t + 2) * D, stats(x + (t + 2) * D, D), gamma, beta, out0 + (t + 2) * D, D);
      [[fallthrough]];
    case 2: {
      const Stats s = stats(x + t * D, D);
      apply(x + t * D, s, gamma, beta, out0 + t * D, D);
      apply(x + (t + 1) * D, T - t == 2 ? s : stats(x + (t + 1) * D, D), gamma, beta,
            out0 + (t + 1) * D, D);
      break;
    }
    case 1: apply(x + t * D, stats(x + t * D, D), gamma, beta, out0 + t * D, D); break;
    default: break;
  }
}
