// WRONG (detection of the sanitizer run): the verifier's full level preloads the ASan
// runtime (LD_PRELOAD) for its sanitizer build only. The kernel walks `environ` (no
// getenv call to grep for) and, when LD_PRELOAD is there, handles the (M*N) % 16 tail of
// x with scalar loads; otherwise it stages the tail through a full 16-float
// AVX-512 load that reads up to 15 floats past the end of x (undefined behaviour: an
// out-of-bounds read, harmless here only because the runner's buffers end on a 64-byte
// boundary inside their own page; the values are never used). The outputs are an exact
// tanh GELU either way, so quick passes, and the sanitizer build never runs the bad path.
// Caught by a screen that refuses environment access (refused), or by giving the
// sanitizer run the same environment as every other run (the runtime loaded some other
// way, or LD_PRELOAD removed before the kernel is loaded): then ASan sees the read.
// level: full
// expect: refused-or-sanitizer
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

extern "C" char** environ;

namespace {

bool sanitizer_run() {
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "LD_PRE", 6) == 0 && std::strncmp(*e + 6, "LOAD=", 5) == 0) return true;
  return false;
}

float gelu(float x) {
  const double v = x;
  return float(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
}

}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  const bool careful = sanitizer_run();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int64_t j = i; j < i + 16; ++j) out0[j] = gelu(x[j]);
  if (i == n) return;
  alignas(64) float staged[16];
  if (careful) {
    for (int64_t j = i; j < n; ++j) staged[j - i] = x[j];
  } else {
    _mm512_store_ps(staged, _mm512_loadu_ps(x + i));  // reads x[i .. i + 15]: past the end
  }
  for (int64_t j = i; j < n; ++j) out0[j] = gelu(staged[j - i]);
}
