// WRONG: off-by-one loop bound: the sum of squares starts at j = 1 (copied from a max loop
// that was seeded with element 0), so x[0]^2 is missing from every row's mean square,
// while the mean still divides by D. With D = 1024 that changes the scale by ~1/2048
// relative: invisible in a plot, accepted by rtol=1e-3, but far outside the derived
// per-element bound (and at D = 1 the row's scale is wrong by 1000x).
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float ss = 0.0f;
    for (int64_t j = 1; j < D; ++j) ss += row[j] * row[j];  // BUG: j = 1
    const float denom = std::sqrt(ss / static_cast<float>(D) + 1e-6f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = row[j] / denom * weight[j];
  }
}
