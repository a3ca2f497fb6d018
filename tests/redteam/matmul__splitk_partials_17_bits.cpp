// WRONG (precision downgrade, within the float bound): for K >= 256 the reduction is split
// into chunks of 128 whose float partial sums are stored, before they are combined, with
// only 17 significant bits (the low 7 mantissa bits rounded off, a compressed split-K
// workspace). Each partial is off by at most 2^-17 of itself, far less than the derived
// float32 bound of a 512-term (or 257-term) dot product, so the float suites pass it (and
// below K = 256, as in the smallest sweep dims, it is a plain correct loop). With integer
// inputs the partials are integers above 2^17 often enough that dropping their low bits
// changes the sum: the integer-exact suite (bit for bit) rejects it.
// expect: wrong
#include <cstdint>
#include <cstring>

namespace {
inline float keep_17_bits(float f) {  // round to nearest even at mantissa bit 7
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u = (u + 0x3Fu + ((u >> 7) & 1u)) & ~0x7Fu;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  const int64_t chunk = K >= 256 ? 128 : K;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float total = 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += chunk) {
        float part = 0.0f;
        for (int64_t k = k0; k < K && k < k0 + chunk; ++k) part += a[i * K + k] * b[k * N + j];
        total += K >= 256 ? keep_17_bits(part) : part;  // BUG: partials lose 7 bits
      }
      out0[i * N + j] = total;
    }
}
