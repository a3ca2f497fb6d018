// WRONG (undefined behaviour): the per-lane partial sums of the mean are declared but never
// initialized (`float part[8];`, the `= {}` forgotten). What they start with is whatever
// the stack held: often 0 in a fresh process (so a single run may pass), garbage after
// other calls or other code ran on that stack. The variance pass is correct, so the error
// is a shifted mean. Caught by repeated runs with different stack contents (poisoned
// stack) or a sanitizer/valgrind-style build (MemorySanitizer); GCC's
// -Wmaybe-uninitialized may warn.
// expect: wrong-or-sanitizer
#include <cmath>
#include <cstdint>

namespace {
__attribute__((noinline)) float row_sum(const float* row, int64_t n) {
  float part[8];  // BUG: never initialized
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) part[k] += row[j + k];
  for (; j < n; ++j) part[0] += row[j];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}
__attribute__((noinline)) void scribble(volatile float* junk, int64_t t) {
  for (int k = 0; k < 64; ++k) junk[k] = static_cast<float>(t + k) * 0.25f;  // leaves values on the stack
}
}  // namespace

extern "C" void ollie_kernel(const float* x, const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    {
      volatile float junk[64];
      scribble(junk, t);  // some unrelated bookkeeping that runs on the same stack
    }
    const float* row = x + t * D;
    const float mean = row_sum(row, D) / static_cast<float>(D);
    float var = 0.0f;
    for (int64_t j = 0; j < D; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<float>(D);
    const float inv = 1.0f / std::sqrt(var + 1e-5f);
    for (int64_t j = 0; j < D; ++j) out0[t * D + j] = (row[j] - mean) * inv * gamma[j] + beta[j];
  }
}
