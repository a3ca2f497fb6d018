// WRONG (crash): the output index uses the wrong stride, i * N * K + j instead of
// i * N + j (a copy-paste from the A indexing). Row 0 is right; row 1 already writes far
// past the end of out0, into unmapped memory (a guard page or nothing): SIGSEGV. ollie
// must report a crash and keep running itself.
// expect: crash
#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      out0[i * N * K + j] = acc;  // BUG: stride N * K
    }
}
