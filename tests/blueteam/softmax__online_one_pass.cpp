// Correct softmax (examples/softmax.py), written differently from the reference: the max
// and the sum come from ONE online pass (running max m and running sum s, rescaling s by
// exp(m_old - m_new) whenever the max grows, as flash attention does), then a second
// pass writes exp(x - m) / s. Same math as the spec; the rounding differs by a few ulps.
// (A first version added exp(-inf - -inf) = NaN for a row starting with -inf; the
// verifier's special-values suite caught it in 1 of 20 fresh-seed runs.)
// expect: pass
#include <cmath>
#include <cstdint>
#include <limits>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float m = -std::numeric_limits<float>::infinity();
    float s = 0.0f;
    for (int64_t j = 0; j < N; ++j) {
      const float v = row[j];
      if (v > m) {  // the max grows: rescale what was summed so far
        s = s * std::exp(m - v) + 1.0f;
        m = v;
      } else if (v == v) {
        // -inf adds exp(-inf - m) = 0 once the max is finite; while the max is still
        // -inf, exp(-inf - -inf) would be NaN (the fallback below handles all -inf rows).
        if (v != -std::numeric_limits<float>::infinity()) s += std::exp(v - m);
      } else {  // NaN: the whole row is NaN, as in the spec
        m = v;
        s = v;
        break;
      }
    }
    float* o = out0 + i * N;
    if (!std::isfinite(m)) {  // an infinite or NaN max: follow the spec literally
      float mx = row[0];
      for (int64_t j = 1; j < N; ++j) mx = (row[j] > mx || row[j] != row[j]) ? row[j] : mx;
      float sum = 0.0f;
      for (int64_t j = 0; j < N; ++j) sum += std::exp(row[j] - mx);
      for (int64_t j = 0; j < N; ++j) o[j] = std::exp(row[j] - mx) / sum;
      continue;
    }
    const float inv = 1.0f / s;
    for (int64_t j = 0; j < N; ++j) o[j] = std::exp(row[j] - m) * inv;
  }
}
