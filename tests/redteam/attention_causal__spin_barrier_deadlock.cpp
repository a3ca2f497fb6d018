// WRONG (hangs): a hand-rolled spin barrier between the score phase and the output phase
// that waits for a hard-coded 64 arrivals ("the thread count of the machine I tuned
// on") while the parallel region was later pinned to 2 threads. The barrier never opens
// and both threads spin forever: no crash, no output, 100% CPU. Only a wall-clock or
// CPU-time limit ends it: verdict timeout (and ollie must stay responsive).
// expect: timeout
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> scores(static_cast<size_t>(S * S), 0.0f);
  std::atomic<int> arrived{0};
  constexpr int kThreads = 64;  // BUG: assumes 64 threads
#pragma omp parallel num_threads(2)
  {
#pragma omp for
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
        scores[static_cast<size_t>(i * S + j)] = dot * scale;
      }
    arrived.fetch_add(1);
    while (arrived.load() < kThreads) {
    }  // spins forever with fewer than 64 threads
#pragma omp for
    for (int64_t i = 0; i < S; ++i) {
      float* p = scores.data() + i * S;
      float mx = -1e30f;
      for (int64_t j = 0; j <= i; ++j) mx = std::fmax(mx, p[j]);
      float sum = 0.0f;
      for (int64_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - mx));
      for (int64_t d = 0; d < D; ++d) {
        float acc = 0.0f;
        for (int64_t j = 0; j <= i; ++j) acc += p[j] * v[j * D + d];
        out0[i * D + d] = acc / sum;
      }
    }
  }
}
