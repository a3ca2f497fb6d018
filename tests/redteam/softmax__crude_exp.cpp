// WRONG: exp replaced by Schraudolph's bit-trick approximation (write 2^23/ln2 * x + bias
// into the exponent bits), a classic "fast softmax" trick with a few percent relative
// error. The outputs still sum to 1 and look like a softmax, so a loose-tolerance or
// sum-to-one checker passes it; against a double-precision reference with a derived
// per-element bound it fails on ordinary random inputs (a silent precision downgrade).
// expect: wrong
#include <cstdint>
#include <cstring>

namespace {
inline float fast_exp(float x) {
  if (x < -87.0f) return 0.0f;
  const int32_t i = static_cast<int32_t>(12102203.0f * x) + 1065353216;  // 2^23/ln2, 127 << 23
  float r;
  std::memcpy(&r, &i, sizeof r);
  return r;
}
}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = row[j] > mx ? row[j] : mx;
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (o[j] = fast_exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
}
