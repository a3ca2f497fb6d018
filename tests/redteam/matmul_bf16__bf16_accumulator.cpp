// WRONG (precision downgrade): the spec multiplies bfloat16 values in float32 and sums
// them in float32; this kernel keeps its accumulators in bfloat16, rounding each partial
// sum to 8 significant bits after every product is added (as a kernel that accumulates in
// the inputs' 16-bit type would). Every product is exact, so the error hides in the sums:
// outputs agree with the spec to 2-3 significant digits, which passes rtol=1e-2 checkers;
// the derived float32 bound rejects it on random inputs.
// expect: wrong
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
float from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
float round_bf16(float f) {  // to nearest even, kept in a float
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace

extern "C" void ollie_kernel(const uint16_t* a, const uint16_t* b, float* out0,
                             const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  std::vector<float> brow(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    float* acc = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) acc[j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float aik = from_bf16(a[i * K + k]);
      for (int64_t j = 0; j < N; ++j) brow[j] = from_bf16(b[k * N + j]);
      for (int64_t j = 0; j < N; ++j) acc[j] = round_bf16(acc[j] + aik * brow[j]);  // BUG
    }
  }
}
