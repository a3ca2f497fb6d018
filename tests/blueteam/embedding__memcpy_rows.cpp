// CORRECT: gathers each token's row with std::memcpy into a scratch row (the wrap of a
// negative id written as `id + (id >> 63 & V)`, without a branch), adds the position row,
// and normalizes in two passes; threads over tokens. Written unlike the emitted kernel,
// which reads wte[wrap(ids[t]) * D + d] inside every loop.
// expect: pass
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" void ollie_kernel(const int64_t* ids, const float* wte, const float* wpe,
                             const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], V = dims[1], D = dims[2];
#pragma omp parallel
  {
    std::vector<float> x(static_cast<size_t>(D));
#pragma omp for
    for (int64_t t = 0; t < T; ++t) {
      const int64_t id = ids[t];
      const int64_t row = id + ((id >> 63) & V);
      std::memcpy(x.data(), wte + row * D, static_cast<size_t>(D) * sizeof(float));
      float mean = 0.0f;
      for (int64_t d = 0; d < D; ++d) {
        x[static_cast<size_t>(d)] += wpe[t * D + d];
        mean += x[static_cast<size_t>(d)];
      }
      mean /= static_cast<float>(D);
      float var = 0.0f;
      for (int64_t d = 0; d < D; ++d) {
        const float c = x[static_cast<size_t>(d)] - mean;
        var += c * c;
      }
      const float inv = 1.0f / std::sqrt(var / static_cast<float>(D) + 1e-5f);
      for (int64_t d = 0; d < D; ++d)
        out0[t * D + d] = (x[static_cast<size_t>(d)] - mean) * inv * gamma[d] + beta[d];
    }
  }
}
