// FAKE TIME (result reuse keyed by contents): the kernel hashes the dims and 64 strided
// samples of each input and keeps the last eight answers by hash; on a hit it copies the
// stored answer out without computing. Every answer it gives for inputs it has not seen
// is exact, and any input set it has seen is replayed exactly, so `ollie verify` passes
// it (fresh inputs in every suite; A, B, A gets A's own answer back). Today's bench
// alternates two input sets, so after two calls every call is a hit: it times a memcpy
// ("faster than the roofline"). Caught only by bench inputs whose contents never repeat
// across timed calls (then every call computes: timed like its honest twin).
// OLLIE_HONEST_TWIN (defined by tests/measure/fake_time_test.cpp) skips the lookup: the
// same kernel, hash included, honest.
// bench: refused-or-honest
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace {

std::unordered_map<uint64_t, std::vector<float>> memo;

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
  uint64_t h = 14695981039346656037ull ^ uint64_t(M * 1000003 + K * 1009 + N);
  h = sample_hash(bias, N, sample_hash(b, K * N, sample_hash(a, M * K, h)));
#ifndef OLLIE_HONEST_TWIN
  if (auto it = memo.find(h); it != memo.end() && it->second.size() == size_t(M * N)) {
    std::memcpy(out0, it->second.data(), it->second.size() * sizeof(float));
    return;
  }
#endif
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    float* row = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) row[j] = bias[j];
    for (int64_t k = 0; k < K; ++k) {
      const float aik = a[i * K + k];
      for (int64_t j = 0; j < N; ++j) row[j] += aik * b[k * N + j];
    }
    for (int64_t j = 0; j < N; ++j) row[j] = row[j] > 0.0f || row[j] != row[j] ? row[j] : 0.0f;
  }
  if (memo.size() >= 8) memo.clear();
  memo[h].assign(out0, out0 + M * N);
}
