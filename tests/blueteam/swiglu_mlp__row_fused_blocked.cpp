// Correct swiglu_mlp (examples/swiglu_mlp.py) fused per row: for each token row, the gate
// and up projections are computed together in one k-outer sweep over D (two
// accumulator rows), silu(g) * u is formed in place (silu as g / (1 + exp(-g))), and the
// down projection accumulates hidden[f] * w_down[f][:] into the output row in blocks of
// 128 of F, so the [T, F] hidden matrix never exists. Rows run in parallel (OpenMP).
// expect: pass
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* x, const float* w_gate, const float* w_up, const float* w_down,
                             float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1], F = dims[2];
  constexpr int64_t FB = 128;
#pragma omp parallel
  {
    std::vector<float> g(static_cast<size_t>(FB)), u(static_cast<size_t>(FB));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < T; ++t) {
      const float* xr = x + t * D;
      float* o = out0 + t * D;
      std::fill(o, o + D, 0.0f);
      for (int64_t f0 = 0; f0 < F; f0 += FB) {
        const int64_t fb = std::min(FB, F - f0);
        std::fill(g.begin(), g.end(), 0.0f);
        std::fill(u.begin(), u.end(), 0.0f);
        for (int64_t d = 0; d < D; ++d) {
          const float xv = xr[d];
          const float* wg = w_gate + d * F + f0;
          const float* wu = w_up + d * F + f0;
#pragma omp simd
          for (int64_t f = 0; f < fb; ++f) {
            g[static_cast<size_t>(f)] += xv * wg[f];
            u[static_cast<size_t>(f)] += xv * wu[f];
          }
        }
        for (int64_t f = 0; f < fb; ++f) {
          const float gv = g[static_cast<size_t>(f)];
          const float hv = gv / (1.0f + std::exp(-gv)) * u[static_cast<size_t>(f)];
          const float* wd = w_down + (f0 + f) * D;
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) o[d] += hv * wd[d];
        }
      }
    }
  }
}
