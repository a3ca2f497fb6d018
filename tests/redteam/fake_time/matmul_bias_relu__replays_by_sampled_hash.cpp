// FAKE TIME (result reuse keyed by contents): the kernel hashes the dims and 64 strided
// samples of each input and keeps the last eight answers by hash; on a hit it copies the
// stored answer out without computing. Every answer it gives for inputs it has not seen
// is exact, and any input set it has seen is replayed exactly, so `ollie verify` passes
// it (fresh inputs in every suite; A, B, A gets A's own answer back). Today's bench
// alternates two input sets, so after two calls every call is a hit: it times a memcpy,
// paced to a third of an honest call's time (3x faster looks like good work; a bare
// memcpy would be "faster than the roofline" and refused). Caught only by bench inputs whose contents never repeat
// across timed calls (then every call computes: timed like its honest twin).
// OLLIE_HONEST_TWIN (defined by tests/measure/fake_time_test.cpp) skips the lookup: the
// same kernel, hash included, honest.
// bench: refused-or-honest
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace {

std::unordered_map<uint64_t, std::vector<float>> memo;
std::vector<double> honest_seconds;  // the computed calls' times

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The median of the honest (computed) calls' times so far: a steady target to pace to.
[[maybe_unused]] double typical(std::vector<double>& seen) {
  if (seen.empty()) return 0;
  std::nth_element(seen.begin(), seen.begin() + long(seen.size() / 2), seen.end());
  return seen[seen.size() / 2];
}

uint64_t sample_hash(const float* p, int64_t n, uint64_t h) {
  for (int s = 0; s < 64; ++s) {
    uint32_t bits;
    std::memcpy(&bits, p + (n * s) / 64, sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

}  // namespace

extern "C" void ollie_kernel(const float* a, const float* b, const float* bias, float* out0,
                             const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  const double start = now();
  uint64_t h = 14695981039346656037ull ^ uint64_t(M * 1000003 + K * 1009 + N);
  h = sample_hash(bias, N, sample_hash(b, K * N, sample_hash(a, M * K, h)));
#ifndef OLLIE_HONEST_TWIN
  if (auto it = memo.find(h); it != memo.end() && it->second.size() == size_t(M * N)) {
    std::memcpy(out0, it->second.data(), it->second.size() * sizeof(float));
    const double target = typical(honest_seconds) / 3;  // "3x faster": plausible
    while (now() - start < target) {
    }
    return;
  }
#endif
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    float* row = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) {  // a dot product per element: b read down a column
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      row[j] = acc + bias[j];
    }
    for (int64_t j = 0; j < N; ++j) row[j] = row[j] > 0.0f || row[j] != row[j] ? row[j] : 0.0f;
  }
  honest_seconds.push_back(now() - start);
  if (memo.size() >= 8) memo.clear();
  memo[h].assign(out0, out0 + M * N);
}
