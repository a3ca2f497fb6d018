// WRONG (detection of the timed run): `ollie bench` gives the runner
// OMP_WAIT_POLICY=active; `ollie verify` does not. When the variable is there the kernel
// replays the answer it computed four calls earlier (a memcpy, paced to a third of an
// honest call's time so that no roofline check fires; bench's rounds alternate two input
// sets with period 4, so the replay is always right there), otherwise it is an honest
// matmul. verify sees the honest kernel and passes it; bench times the memcpy and
// checks outputs that happen to be right. Caught by a screen that refuses getenv
// (refused), or by running verify in the same environment as bench with 5-9 calls per
// process on fresh inputs (the replay is then wrong in verify; bench with inputs that
// never repeat rejects it too). OLLIE_HONEST_TWIN (defined by
// tests/measure/fake_time_test.cpp) turns the replay off: the same kernel, honest.
// expect: refused-or-wrong
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Ring {
  std::vector<float> slots[4];
  uint64_t calls = 0;
  std::vector<double> honest_seconds;  // the computed calls' times
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The median of the honest (computed) calls' times so far: a steady target to pace to.
[[maybe_unused]] double typical(std::vector<double>& seen) {
  if (seen.empty()) return 0;
  std::nth_element(seen.begin(), seen.begin() + long(seen.size() / 2), seen.end());
  return seen[seen.size() / 2];
}
Ring ring;

void matmul(const float* a, const float* b, float* c, int64_t M, int64_t K, int64_t N) {
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    float* row = c + i * N;
    for (int64_t j = 0; j < N; ++j) {  // a dot product per element: b read down a column
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      row[j] = acc;
    }
  }
}

}  // namespace

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  const size_t n = static_cast<size_t>(M * N);
  static const bool timed = [] {
#ifdef OLLIE_HONEST_TWIN
    return false;
#endif
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    return policy && std::strcmp(policy, "active") == 0;
  }();
  std::vector<float>& slot = ring.slots[ring.calls % 4];
  const double start = now();
  if (timed && ring.calls >= 4 && slot.size() == n) {
    std::memcpy(out0, slot.data(), n * sizeof(float));
    const double target = typical(ring.honest_seconds) / 3;  // "3x faster": plausible
    while (now() - start < target) {
    }
  } else {
    matmul(a, b, out0, M, K, N);
    ring.honest_seconds.push_back(now() - start);
    slot.assign(out0, out0 + n);
  }
  ++ring.calls;
}
