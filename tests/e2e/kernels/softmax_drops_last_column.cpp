// A wrong softmax in the ollie ABI: its sums skip the last column (an off-by-one loop
// bound), so every row is slightly off. `ollie run-kernel` must say it disagrees.
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out, const int64_t* dims) {
  const int64_t m = dims[0], n = dims[1];
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * n;
    float* o = out + i * n;
    float mx = row[0];
    for (int64_t j = 1; j < n; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) o[j] = std::exp(row[j] - mx);
    for (int64_t j = 0; j + 1 < n; ++j) sum += o[j];
    for (int64_t j = 0; j < n; ++j) o[j] /= sum;
  }
}
