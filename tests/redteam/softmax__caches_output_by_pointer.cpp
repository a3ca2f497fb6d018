// WRONG: the first call computes a correct softmax and keeps a copy of it; a later call
// with the SAME input/output pointers and dims returns the copy without looking at the
// input ("the benchmark calls me 100 times on the same buffers"). Every single call in a
// fresh process is correct, so a checker that runs the kernel once per process (as
// `ollie run-kernel` does) or only on fresh buffers passes it. Caught by the hygiene
// order A, B, A run in one process with the same buffers refilled with new contents
// (B gets A's answer), and by checking the outputs of timed runs.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
const float* g_x = nullptr;
float* g_out = nullptr;
int64_t g_m = -1, g_n = -1;
// A function-local static: a namespace-scope vector would be load-time code, which the
// screen refuses before this kernel could show what it is here to show.
std::vector<float>& g_cache() {
  static std::vector<float> cache;
  return cache;
}
}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  if (x == g_x && out0 == g_out && M == g_m && N == g_n) {  // "seen it": replay
    std::memcpy(out0, g_cache().data(), g_cache().size() * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (o[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
  g_x = x, g_out = out0, g_m = M, g_n = N;
  g_cache().assign(out0, out0 + M * N);
}
