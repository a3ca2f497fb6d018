// WRONG (precision downgrade): the rotation angles p * inv_freq are computed in float32
// (and cosf/sinf applied to them), where the spec builds the angle tables in float64 and
// casts only cos/sin to float32. At position p ~ 500 the float angle is off by up to
// ~p * 2^-24 ~ 3e-5 rad, so outputs differ by ~3e-5 relative: invisible at p = 0..10 (a
// checker that tests short sequences passes it) and beyond the derived bound at the
// default S = 512 on any random input.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], H = dims[1], HD = dims[2];
  for (int64_t p = 0; p < S; ++p)
    for (int64_t i = 0; i < HD / 2; ++i) {
      const float inv_freq = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / static_cast<float>(HD));
      const float angle = static_cast<float>(p) * inv_freq;  // BUG: float32 angle
      const float c = std::cos(angle), s = std::sin(angle);
      for (int64_t h = 0; h < H; ++h) {
        const float* xv = x + (p * H + h) * HD;
        float* o = out0 + (p * H + h) * HD;
        o[2 * i] = xv[2 * i] * c - xv[2 * i + 1] * s;
        o[2 * i + 1] = xv[2 * i] * s + xv[2 * i + 1] * c;
      }
    }
}
