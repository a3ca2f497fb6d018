// Random numbers for the verifier's inputs and the runner's plausible outputs:
// xoshiro256** streams seeded through splitmix64, a ziggurat sampler of the standard
// normal, and unbiased bounded integers. Fast (a few nanoseconds per normal draw, against
// ~25 for std::mt19937_64 with std::normal_distribution) and the same on every machine for
// the same seed: the tables are constants, and only the rare tail and wedge draws (about
// 1%) call exp or log.
//
// References: Blackman and Vigna, "Scrambled linear pseudorandom number generators"
// (2021) for xoshiro256** and splitmix64; Marsaglia and Tsang, "The Ziggurat Method for
// Generating Random Variables" (2000), with the layer index, sign and magnitude taken
// from disjoint bits of one 64-bit draw (Doornik 2005: reusing the bits biases the
// result); Lemire, "Fast random integer generation in an interval" (2019).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ollie::random {

#include "support/ziggurat_tables.inc"

// splitmix64's finalizer: a bijection of 64-bit words that mixes every bit into every bit.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Xoshiro256 {
 public:
  // The state is four successive outputs of splitmix64 started at `seed` (never all zero).
  explicit Xoshiro256(uint64_t seed)
      : s0_(mix64(seed + 0x9e3779b97f4a7c15ULL)),
        s1_(mix64(seed + 2 * 0x9e3779b97f4a7c15ULL)),
        s2_(mix64(seed + 3 * 0x9e3779b97f4a7c15ULL)),
        s3_(mix64(seed + 4 * 0x9e3779b97f4a7c15ULL)) {}
  // Stream `stream` of `seed`: independent generators for, e.g., each chunk of each
  // tensor, so that a tensor's values do not depend on the sizes of the others and
  // chunks can be drawn in any order (or in parallel) with the same result.
  Xoshiro256(uint64_t seed, uint64_t stream)
      : Xoshiro256(mix64(seed) ^ mix64(~stream * 0xd1b54a32d192ed03ULL)) {}

  [[gnu::always_inline]] uint64_t next() {
    const uint64_t result = rotl(s1_ * 5, 7) * 9;
    const uint64_t t = s1_ << 17;
    s2_ ^= s0_;
    s3_ ^= s1_;
    s1_ ^= s2_;
    s0_ ^= s3_;
    s2_ ^= t;
    s3_ = rotl(s3_, 45);
    return result;
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(static_cast<int64_t>(next() >> 11)) * 0x1p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s0_, s1_, s2_, s3_;
};

// Uniform in [0, n), unbiased (Lemire's multiply-and-reject on the draw's high 32 bits);
// 0 < n < 2^32.
inline uint32_t below(Xoshiro256& g, uint32_t n) {
  uint64_t m = (g.next() >> 32) * n;
  auto low = static_cast<uint32_t>(m);
  if (low < n) {
    const uint32_t threshold = (0u - n) % n;
    while (low < threshold) {
      m = (g.next() >> 32) * n;
      low = static_cast<uint32_t>(m);
    }
  }
  return static_cast<uint32_t>(m >> 32);
}

inline double normal(Xoshiro256& g);

namespace detail {
inline double with_sign(double x, uint64_t sign) {
  return std::bit_cast<double>(std::bit_cast<uint64_t>(x) ^ sign);
}

// The ziggurat's rare cases (about 1% of draws), out of line so that the common one
// inlines: the tail beyond kZigR (layer 0) and the wedges between a layer's rectangle and
// the curve; a rejected point starts a fresh draw. The generator goes in and comes back
// by value, so that a caller's generator never has its address taken and stays in
// registers.
[[gnu::noinline, gnu::cold]] inline Xoshiro256 normal_rare(Xoshiro256 g, unsigned layer,
                                                           uint64_t sign, double x,
                                                           double& result) {
  if (layer == 0) {
    // The tail (Marsaglia 1964): exact, by rejection from an exponential.
    for (;;) {
      const double xx = -std::log1p(-g.uniform()) / kZigR;
      const double yy = -std::log1p(-g.uniform());
      if (yy + yy > xx * xx) {
        result = with_sign(kZigR + xx, sign);
        return g;
      }
    }
  }
  // Accept under the curve.
  if ((kZigF[layer - 1] - kZigF[layer]) * g.uniform() + kZigF[layer] < std::exp(-0.5 * x * x))
    result = with_sign(x, sign);
  else
    result = normal(g);
  return g;
}
}  // namespace detail

// A standard normal draw (mean 0, variance 1) by the 256-layer ziggurat: one 64-bit draw
// gives the layer (bits 0-7), the sign (bit 8) and a 52-bit magnitude (bits 12-63);
// about 99% of draws return at the first comparison.
[[gnu::always_inline]] inline double normal(Xoshiro256& g) {
  const uint64_t r = g.next();
  const auto layer = static_cast<unsigned>(r & 0xff);
  const uint64_t sign = (r >> 8 & 1) << 63;  // the sign bit, applied without a branch
  const uint64_t magnitude = r >> 12;
  const double x =
      static_cast<double>(static_cast<int64_t>(magnitude)) * kZigW[layer];  // exact: < 2^52
  if (magnitude < kZigK[layer]) [[likely]]
    return detail::with_sign(x, sign);
  double result;
  g = detail::normal_rare(g, layer, sign, x, result);
  return result;
}

}  // namespace ollie::random
