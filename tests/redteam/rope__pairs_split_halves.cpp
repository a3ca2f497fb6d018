// WRONG (layout): rotates the "half-split" pairs (x[i], x[i + HD/2]) of the NeoX/Llama-HF
// convention instead of the spec's interleaved pairs (x[2i], x[2i+1]). Both are
// legitimate RoPE variants, outputs have the same norm per pair and position 0 is the
// identity for both, so a checker that tests S = 1, or checks norms, passes it. Any
// value check at a position > 0 catches it.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], H = dims[1], HD = dims[2];
  const int64_t P = HD / 2;
  for (int64_t p = 0; p < S; ++p)
    for (int64_t i = 0; i < P; ++i) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(2 * i) / static_cast<double>(HD));
      const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      for (int64_t h = 0; h < H; ++h) {
        const float* xv = x + (p * H + h) * HD;
        float* o = out0 + (p * H + h) * HD;
        o[i] = xv[i] * c - xv[i + P] * s;  // BUG: pairs (i, i + HD/2)
        o[i + P] = xv[i] * s + xv[i + P] * c;
      }
    }
}
