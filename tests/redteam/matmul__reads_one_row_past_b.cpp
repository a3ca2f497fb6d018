// WRONG (out-of-bounds read): a software-pipelined inner loop that loads the NEXT row of
// B (b[(k + 1) * N + j]) while using the current one, without stopping at the last k.
// The extra value is multiplied by nothing and never affects the result, so every
// output is right. At the default dims B is 512 KiB, a whole number of pages, so the
// overrun touches the page right after it: a guard page there turns it into SIGSEGV.
// Without guard pages (or at dims where the buffer ends mid-page) only AddressSanitizer
// sees it.
// expect: crash-or-sanitizer
#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i) {
    float* o = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) o[j] = 0.0f;
    for (int64_t j = 0; j < N; ++j) {
      volatile float next = b[j];  // prefetched row
      for (int64_t k = 0; k < K; ++k) {
        const float cur = next;
        next = b[(k + 1) * N + j];  // BUG: reads row K (past the end) on the last k
        o[j] += a[i * K + k] * cur;
      }
    }
  }
}
