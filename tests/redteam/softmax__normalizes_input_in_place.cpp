// WRONG: computes exp(x - max) INTO THE INPUT buffer (const_cast) to save a scratch
// row, then writes out = x / sum. The output values are right, so a checker that only
// compares outputs passes it; but it destroys the caller's input (and a caller reusing x,
// or a second call, sees garbage). Caught by inputs mapped read-only (SIGSEGV on the
// first store: verdict crash) or by comparing the inputs after the call.
// expect: crash
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  float* xm = const_cast<float*>(x);
  for (int64_t i = 0; i < M; ++i) {
    float* row = xm + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (row[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) out0[i * N + j] = row[j] / sum;
  }
}
