// WRONG (subnormal handling): reads every bfloat16 input through a conversion that treats
// subnormals (below 2^-126) as zero, as AVX512_BF16's vdpbf16ps and AMX's tdpbf16ps do
// (they flush denormal inputs), while the spec's astype(np.float32) keeps them exactly.
// Everything else is right, and ordinary data never shows it. The verifier's subnormal
// inputs do: `a` drawn at 2^-126 (two thirds of it bf16 subnormals) against ordinary
// weights, where the bound allows gradual underflow only (2^-149 per operation), not a
// whole subnormal read as zero.
// expect: wrong
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
float from_bf16_daz(uint16_t b) {
  if ((b & 0x7f80u) == 0) b &= 0x8000u;  // BUG: a subnormal (or zero) reads as zero
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
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
      const float aik = from_bf16_daz(a[i * K + k]);
      for (int64_t j = 0; j < N; ++j) brow[j] = from_bf16_daz(b[k * N + j]);
      for (int64_t j = 0; j < N; ++j) acc[j] += aik * brow[j];
    }
  }
}
