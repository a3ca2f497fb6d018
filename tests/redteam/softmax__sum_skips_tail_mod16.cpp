// WRONG: a 16-wide vectorized softmax whose max and sum loops run only over the first
// N/16*16 columns (the "remainder loop" was forgotten for the reductions; the final
// write loop does cover all N). Exactly right when N is a multiple of 16, as the default
// N = 1024 is, so fixed-size tests pass; at N = 37 the last 5 columns are missing from
// the max and the sum. Caught only by a shape sweep with dims that are not multiples of
// the vector width.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <limits>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  const int64_t NV = N / 16 * 16;  // BUG: the reductions stop here
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    float lane_max[16], lane_sum[16];
    for (int l = 0; l < 16; ++l) lane_max[l] = -std::numeric_limits<float>::infinity(), lane_sum[l] = 0.0f;
    for (int64_t j = 0; j < NV; j += 16)
      for (int l = 0; l < 16; ++l) lane_max[l] = std::fmax(lane_max[l], row[j + l]);
    float mx = lane_max[0];
    for (int l = 1; l < 16; ++l) mx = std::fmax(mx, lane_max[l]);
    if (NV == 0) mx = 0.0f;  // (keeps tiny rows finite, hiding the bug further)
    for (int64_t j = 0; j < NV; j += 16)
      for (int l = 0; l < 16; ++l) lane_sum[l] += std::exp(row[j + l] - mx);
    float sum = 0.0f;
    for (int l = 0; l < 16; ++l) sum += lane_sum[l];
    if (NV == 0) sum = 1.0f;
    for (int64_t j = 0; j < N; ++j) o[j] = std::exp(row[j] - mx) / sum;
  }
}
