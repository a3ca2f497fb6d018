// WRONG (memory): "packs" B for every row of A into one scratch buffer sized
// M * K * N * 4096 floats (a units mix-up: elements times page bytes), 512 GiB
// at the default dims, via std::vector. operator new fails under the runner's
// address-space limit; ollie must report out-of-memory, not crash or hang the machine.
// expect: out-of-memory
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  std::vector<float> packed(static_cast<size_t>(M * K * N * 4096));  // BUG: absurd size
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) packed[static_cast<size_t>(j * K + k)] = b[k * N + j];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * packed[static_cast<size_t>(j * K + k)];
      out0[i * N + j] = acc;
    }
}
