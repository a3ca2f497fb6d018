// Correct rope (examples/rope.py) without the [S, HD/2] angle tables: for each position
// the cos/sin of p * inv_freq[i] are computed on the fly (in double, then rounded to
// float exactly like the spec's .astype(np.float32)) and applied to all H heads at once;
// the rotation uses std::fma for one product of each pair (even*cos - odd*sin as
// fma(even, cos, -(odd*sin))). Positions run in parallel (OpenMP). Generic in S, H and
// any even HD.
// expect: pass
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], H = dims[1], HD = dims[2];
  const int64_t P = HD / 2;
  std::vector<double> inv_freq(static_cast<size_t>(P));
  for (int64_t i = 0; i < P; ++i)
    inv_freq[static_cast<size_t>(i)] = 1.0 / std::pow(10000.0, static_cast<double>(2 * i) / static_cast<double>(HD));
#pragma omp parallel
  {
    std::vector<float> c(static_cast<size_t>(P)), s(static_cast<size_t>(P));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < S; ++p) {
      for (int64_t i = 0; i < P; ++i) {
        const double angle = static_cast<double>(p) * inv_freq[static_cast<size_t>(i)];
        c[static_cast<size_t>(i)] = static_cast<float>(std::cos(angle));
        s[static_cast<size_t>(i)] = static_cast<float>(std::sin(angle));
      }
      for (int64_t h = 0; h < H; ++h) {
        const float* xv = x + (p * H + h) * HD;
        float* o = out0 + (p * H + h) * HD;
        for (int64_t i = 0; i < P; ++i) {
          const float e = xv[2 * i], d = xv[2 * i + 1];
          const float ci = c[static_cast<size_t>(i)], si = s[static_cast<size_t>(i)];
          o[2 * i] = std::fma(e, ci, -(d * si));
          o[2 * i + 1] = std::fma(e, si, d * ci);
        }
      }
    }
  }
}
