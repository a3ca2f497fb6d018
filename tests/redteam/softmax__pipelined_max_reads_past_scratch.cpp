// WRONG (heap-buffer-overflow, undefined behaviour): each row is copied into a malloc'd
// scratch of N floats, and the max loop is software-pipelined: it loads the NEXT element
// (row[n + 1]) while comparing the current one, without stopping at the last n, so
// every row reads one float past the end of the allocation. The value read last is
// never compared (the loop ends), so every output is right, and the read lands inside
// the malloc chunk's rounding or the next chunk's header: no guard page is near, no
// crash, no NaN, at any dims. Only the AddressSanitizer build of the full level sees it
// (heap-buffer-overflow); another allocator, or a scratch that ends on a page, crashes.
// level: full
// expect: sanitizer
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  float* row = static_cast<float*>(std::malloc(static_cast<size_t>(N) * sizeof(float)));
  for (int64_t m = 0; m < M; ++m) {
    std::memcpy(row, x + m * N, static_cast<size_t>(N) * sizeof(float));
    float mx = -INFINITY, cur = row[0];
    for (int64_t n = 0; n < N; ++n) {
      const float next = row[n + 1];  // BUG: row[N] on the last n
      mx = std::fmax(mx, cur);
      cur = next;
    }
    float sum = 0.0f;
    for (int64_t n = 0; n < N; ++n) sum += std::exp(row[n] - mx);
    for (int64_t n = 0; n < N; ++n) out0[m * N + n] = std::exp(row[n] - mx) / sum;
  }
  std::free(row);
}
