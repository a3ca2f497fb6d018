// WRONG (float16 intermediate overflow): the statistics are computed in float32 as the
// spec says, but the sum of squared deviations is handed from the variance pass to the
// normalization through a float16 temporary (as a kernel that keeps its row statistics in
// a 16-bit buffer would). Past 65504 (a row of 1024 values of spread above 8, the
// verifier's wide inputs) it is inf, the variance is inf and every element of the row
// comes out as beta; the spec's float32 intermediates never overflow there. Below 65504
// the temporary costs half a float16 ulp of the variance, a quarter of one in the output:
// a checker that allows an ulp of the float16 output misses that part, the verifier's
// bound (the output's own rounding, nothing more) catches it on ordinary inputs already.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {
    const float m = static_cast<float>(mantissa) * 0x1p-24f;
    std::memcpy(&bits, &m, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, overflow to inf, subnormals kept (numpy's astype(np.float16)).
uint16_t float_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (a >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    const uint32_t r = a - (112u << 23);
    return static_cast<uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(std::fabs(f) * 0x1p24f)));
}

}  // namespace

extern "C" void ollie_kernel(const uint16_t* x, const float* gamma, const float* beta,
                             uint16_t* out0, const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  for (int64_t t = 0; t < T; ++t) {
    const uint16_t* row = x + t * D;
    float s = 0.0f;
    for (int64_t j = 0; j < D; ++j) s += f16_to_float(row[j]);
    const float mean = s / static_cast<float>(D);
    float s2 = 0.0f;
    for (int64_t j = 0; j < D; ++j) {
      const float c = f16_to_float(row[j]) - mean;
      s2 += c * c;
    }
    const uint16_t s2_half = float_to_f16(s2);  // BUG: a float16 intermediate
    const float inv = 1.0f / std::sqrt(f16_to_float(s2_half) / static_cast<float>(D) + 1e-5f);
    for (int64_t j = 0; j < D; ++j)
      out0[t * D + j] = float_to_f16((f16_to_float(row[j]) - mean) * inv * gamma[j] + beta[j]);
  }
}
