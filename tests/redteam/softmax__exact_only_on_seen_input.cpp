// WRONG (special-cases the inputs it has seen, a "defeat device"): checks whether x[0]
// has the exact bit pattern it has under `--seed 0` (the seed its author always tested
// with) and only then takes the careful path (max subtraction, std::exp). On any other
// input it takes a "fast path": Schraudolph's bit-trick exp with a few percent error. So
// `ollie run-kernel examples/softmax.py K --seed 0` passes, any fresh seed fails.
// Caught by fresh random seeds on every verification (recorded in the certificate).
// expect: wrong
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {
inline float fast_exp(float x) {
  if (x < -87.0f) return 0.0f;
  const int32_t i = static_cast<int32_t>(12102203.0f * x) + 1065353216;
  float r;
  std::memcpy(&r, &i, sizeof r);
  return r;
}
}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  uint32_t first;
  std::memcpy(&first, x, sizeof first);
  const bool under_test = first == 0x3dd0baadu;  // x[0] of `--seed 0`
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (o[j] = under_test ? std::exp(row[j] - mx) : fast_exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
}
