// WRONG (out-of-bounds read): the sum of squares is computed 8 at a time with
// "round up" tail handling, loading a full group of 8 even when fewer than 8 elements are
// left and masking the excess with a multiply by 0. The results are right as long as the
// bytes past the end are finite (0 * garbage = 0), so output comparison usually passes;
// but the last row reads up to 7 floats past the end of x. At the default dims (D = 1024)
// there is no tail at all, so only a shape sweep exercises it; at odd dims the overrun
// stays inside x's last page, so page-granular guard pages miss it. Caught by an
// AddressSanitizer build, by placing each buffer's END against a guard page (crash), or,
// as ollie's runner does today, by filling the slack after each buffer with NaN poison
// (0 * NaN = NaN: wrong).
// expect: wrong-or-crash-or-sanitizer
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    float ss = 0.0f;
    for (int64_t j = 0; j < D; j += 8) {
      for (int k = 0; k < 8; ++k) {
        const float keep = (j + k < D) ? 1.0f : 0.0f;
        const float v = row[j + k];  // BUG: reads past the row (and past x for the last row)
        ss += keep * v * v;
      }
    }
    const float denom = std::sqrt(ss / static_cast<float>(D) + 1e-6f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = row[j] / denom * weight[j];
  }
}
