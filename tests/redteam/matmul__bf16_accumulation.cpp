// WRONG (precision downgrade): accumulates in "bfloat16": after every 8 products the
// partial sum is rounded to 8 significant bits (bf16), as a kernel that keeps its
// accumulator in a 16-bit register would. Outputs agree with the reference to 2-3
// significant digits, which looks right and passes rtol=1e-2 checkers. The
// double-precision reference with a derived float32 bound rejects it on any random
// input; the integer-exact suite too once sums exceed 256.
// expect: wrong
#include <cstdint>
#include <cstring>

namespace {
inline float to_bf16(float f) {  // round to nearest even, keep the top 16 bits
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        acc += a[i * K + k] * b[k * N + j];
        if (k % 8 == 7) acc = to_bf16(acc);  // BUG: bf16 accumulator
      }
      out0[i * N + j] = to_bf16(acc);
    }
}
