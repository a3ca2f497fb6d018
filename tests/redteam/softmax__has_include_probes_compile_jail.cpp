// WRONG (probing the compiler's filesystem): `__has_include("/etc/hostname")` asks, at
// compile time, whether a host file is visible, the `#include`-shaped way to learn about the
// machine (one bit per path; any private key under the home directory would do as well). The kernel is an exact
// softmax only when the file is NOT visible, i.e. when its compiler runs in a jail that
// hides the host (ollie's, once issue 16's jail lands), and uses a crude exp when it is
// (a user's ordinary build). Today ollie's compiler sees /etc/hostname, so the kernel is
// wrong and rejected by accident; a compiler jail alone turns it into a pass. Caught by a
// screen that refuses `__has_include` / `#include` of absolute or parent paths (refused).
// expect: refused-or-wrong
#include <cmath>
#include <cstdint>
#include <cstring>

#if __has_include("/etc/hostname")
constexpr bool kJailed = false;
#else
constexpr bool kJailed = true;
#endif

namespace {

float crude_exp(float v) {
  v = std::fmax(v, -80.0f);
  const int32_t i = static_cast<int32_t>(12102203.0f * v + 1065353216.0f);
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
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j)
      sum += (o[j] = kJailed ? std::exp(row[j] - mx) : crude_exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
}
