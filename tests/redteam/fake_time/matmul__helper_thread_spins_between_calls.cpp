// FAKE TIME (slows down the kernel it is compared with): on its first call the kernel
// starts a detached helper thread that busy-spins whenever the kernel is NOT running and
// backs off (sched_yield) while it is. Its own calls run at full speed; the other kernel
// timed side by side in the same runner process (`ollie bench A --vs B`, the search's
// comparisons) shares its CPUs with the spinner and looks slower, so the per-round ratio
// flatters the cheat. Its outputs are an exact matmul: verify passes it. Caught by timing
// each kernel in a process of its own, or a check after each call that the kernel left no
// thread of its own running (then refused, or timed like its honest twin).
// OLLIE_HONEST_TWIN (defined by tests/measure/fake_time_test.cpp) starts no helper.
// bench: refused-or-honest
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace {

std::atomic<bool> inside{false};

[[maybe_unused]] void spin_forever() {
  volatile uint64_t sink = 0;
  for (;;) {
    if (inside.load(std::memory_order_relaxed)) {
      sched_yield();
    } else {
      for (int i = 0; i < 100000; ++i) sink = sink * 3 + 1;
    }
  }
}

}  // namespace

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  inside.store(true);
#ifndef OLLIE_HONEST_TWIN
  static const bool started = (std::thread(spin_forever).detach(), true);
  (void)started;
#endif
  const int64_t M = dims[0], K = dims[1], N = dims[2];
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    float* row = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) {  // a dot product per element: b read down a column
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      row[j] = acc;
    }
  }
  inside.store(false);
}
