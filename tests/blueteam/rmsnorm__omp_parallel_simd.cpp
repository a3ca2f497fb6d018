// Correct rmsnorm (examples/rmsnorm.py) with OpenMP: rows split over threads
// (`parallel for`), the sum of squares as a `simd reduction(+:...)` (the compiler keeps
// vector partial sums, so the order differs from a serial sum), accumulated in double,
// then the division by sqrt in float as the spec does.
// level: full
// expect: pass
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  constexpr double kEps = 1e-6;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    double ss = 0.0;
#pragma omp simd reduction(+ : ss)
    for (int64_t j = 0; j < D; ++j) ss += static_cast<double>(row[j]) * row[j];
    const float denom = static_cast<float>(std::sqrt(ss / static_cast<double>(D) + kEps));
    float* o = out0 + t * D;
#pragma omp simd
    for (int64_t j = 0; j < D; ++j) o[j] = row[j] / denom * weight[j];
  }
}
