// WRONG (data race): the row sum is split over OpenMP threads with a SHARED accumulator
// and no reduction clause or atomic (`sum += e` from every thread). The compiler keeps
// each thread's partial in a register and stores it at the end, so the last thread to
// store wins and the sum misses the other threads' terms: wrong with 2+ threads, right
// with 1 (a checker run with OMP_NUM_THREADS=1 passes it), and timing-dependent in
// general. Caught by the float suite when run with several threads (repeated runs), or
// by a ThreadSanitizer build.
// expect: wrong-or-sanitizer
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
#pragma omp parallel for
    for (int64_t j = 0; j < N; ++j) {
      o[j] = std::exp(row[j] - mx);
      sum += o[j];  // BUG: unsynchronized read-modify-write of a shared variable
    }
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
}
