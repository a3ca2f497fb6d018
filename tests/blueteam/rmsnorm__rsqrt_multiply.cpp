// Correct rmsnorm (examples/rmsnorm.py), rsqrt style: one reciprocal r = 1 / std::sqrt(ms
// + eps) per row, then every element is x * r * w (two multiplies, no per-element
// division, as fused GPU kernels do). The sum of squares uses 8 interleaved partial sums
// (a blocked, reordered reduction) combined pairwise at the end.
// expect: pass
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  constexpr float kEps = 1e-6f;
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= D; j += 8)
      for (int k = 0; k < 8; ++k) part[k] += row[j + k] * row[j + k];
    for (; j < D; ++j) part[0] += row[j] * row[j];
    const float ss = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(D) + kEps);
    float* o = out0 + t * D;
    for (int64_t c = 0; c < D; ++c) o[c] = row[c] * r * weight[c];
  }
}
