// WRONG (a predictable harness lets it through): a fast path for rows whose elements are
// all equal (padding rows, masked rows, a freshly initialized tensor: real data has them)
// writes 1/N without any exp, but its loop stops at N - 1, so the last column of such a
// row keeps whatever the output held (NaN poison here, stale values in a real program).
// Random inputs never produce a constant row, and today's special values are scattered
// NaN/inf/0 elements, so no suite reaches the fast path. Caught only by special values
// that include rows of equal values.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    bool constant = std::isfinite(row[0]);
    for (int64_t j = 1; j < N && constant; ++j) constant = row[j] == row[0];
    if (constant) {
      for (int64_t j = 0; j + 1 < N; ++j) o[j] = 1.0f / float(N);
      continue;
    }
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (o[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
}
