// WRONG (heap-use-after-free, undefined behaviour): every row stages gamma into a fresh
// scratch std::vector (as a kernel that converts weights per tile would), but the
// pointer `g` to the staged copy is taken once, in the first row, and kept: from the
// second row on it points into a vector that was freed at the end of row 0. glibc's
// allocator hands the same block straight back to the next row's vector (same size,
// last freed, first reused) and the next row fills it with the same values, so the
// stale pointer happens to see the right gamma and every output agrees with the
// reference at every dims. ASan's allocator quarantines freed blocks instead of reusing
// them: only the AddressSanitizer build of the full level sees it (heap-use-after-free).
// At some of the shape sweep's odd dims (e.g. T=75, D=54) the block is not handed back
// and the outputs are garbage, so any suite may also call it wrong.
// level: full
// expect: sanitizer-or-wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  const float* g = nullptr;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> staged(gamma, gamma + D);
    if (t == 0) g = staged.data();  // BUG: kept after `staged` is destroyed at the end of row 0
    const float* row = x + t * D;
    double sum = 0.0;
    for (int64_t j = 0; j < D; ++j) sum += row[j];
    const float mean = static_cast<float>(sum / static_cast<double>(D));
    double sum_sq = 0.0;
    for (int64_t j = 0; j < D; ++j) sum_sq += static_cast<double>(row[j] - mean) * (row[j] - mean);
    const float inv_std = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(D) + 1e-5));
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = (row[j] - mean) * inv_std * g[j] + beta[j];
  }
}
