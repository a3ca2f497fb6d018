// Vectorizable elementary functions for generated kernels: ollie_math::exp, exp2, tanh and
// log (float and double) and erf (float). The emitter pastes this text into every
// kernel TU (hence include guards, not #pragma once); tests #include it. Without
// -ffast-math GCC calls glibc's scalar exp/tanh, which stops `#pragma omp simd` loops
// from vectorizing; these are branch-free, always-inlined code (fma, integer ops on the
// bits, selects), so such loops vectorize at -O3 -march=native.
//
// Accuracy guarantee (round-to-nearest): at most 2 ulps from the correctly rounded
// result for every input; a subnormal result is within 2 ulps of the smallest
// subnormal spacing. Measured maxima (exhaustive over all 2^32 floats for the float
// versions, 5e7 samples against long double for double; g++ 12 -O3 -march=native):
// exp 1.01 / 1.03, exp2 (sampled) about 1 / 1, tanh 0.87 / 0.86, log 0.83 / 0.83, erf(float) 1.09 ulps.
// tests/emit/kernel_math_test.cpp checks the 2-ulp bound on samples and edge cases.
// The verifier allows K_T = 8 ulps per library function (docs/error-bounds.md).
// Special values follow C: NaN -> NaN, exp(+inf) = inf, exp(-inf) = 0, overflow ->
// inf, underflow -> subnormal or 0, tanh(+-inf) = +-1, tanh(-0) = -0, log(0) = -inf,
// log(x < 0) = NaN, log(inf) = inf, erf(+-inf) = +-1, erf(-0) = -0. errno is never
// set; the rounding mode must be round-to-nearest (the default).
#ifndef OLLIE_EMIT_KERNEL_MATH_H
#define OLLIE_EMIT_KERNEL_MATH_H

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ollie_math {

namespace detail {
// c ? a : b as a bit blend. A plain ?: lets GCC sink the computation of the arm used
// only there into a branch, which stops if-conversion and so vectorization.
[[gnu::always_inline]] inline float select(bool c, float a, float b) {
  const uint32_t m = uint32_t{0} - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}
[[gnu::always_inline]] inline double select(bool c, double a, double b) {
  const uint64_t m = uint64_t{0} - static_cast<uint64_t>(c);
  return std::bit_cast<double>((std::bit_cast<uint64_t>(a) & m) | (std::bit_cast<uint64_t>(b) & ~m));
}
// exp(r) 2^n for the reduced argument r (|r| <= ln2/2) of exp and exp2, where n is read
// off the low bits of t = (shifted value) and `shift`: exp(r) = 1 + r + r^2 q(r), q a
// minimax polynomial (relative error 2^-28.2 for float, 2^-56.7 for double); 2^n applied
// as two exact power-of-two factors, so results near overflow and subnormal results are
// rounded once.
[[gnu::always_inline]] inline float exp_scaled(float r, float t, float shift) {
  float q = 0x1.6a1a5ep-10f;
  q = std::fma(q, r, 0x1.123fd2p-7f);
  q = std::fma(q, r, 0x1.555916p-5f);
  q = std::fma(q, r, 0x1.55548ap-3f);
  q = std::fma(q, r, 0x1.fffffcp-2f);
  const float p = 1.0f + std::fma(r * r, q, r);
  const int32_t k = static_cast<int32_t>(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(shift));
  const int32_t k1 = k >> 1;  // n in [-151, 129]: both halves are normal exponents
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(k1 + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(k - k1 + 127) << 23);
  return p * s1 * s2;
}
[[gnu::always_inline]] inline double exp_scaled(double r, double t, double shift) {
  double q = 0x1.af68485e9dcc4p-26;
  q = std::fma(q, r, 0x1.28b839317de4dp-22);
  q = std::fma(q, r, 0x1.71ddf3f624157p-19);
  q = std::fma(q, r, 0x1.a0198f3eabdbfp-16);
  q = std::fma(q, r, 0x1.a01a01b106d44p-13);
  q = std::fma(q, r, 0x1.6c16c187995c2p-10);
  q = std::fma(q, r, 0x1.111111110f5f1p-7);
  q = std::fma(q, r, 0x1.555555554fd27p-5);
  q = std::fma(q, r, 0x1.5555555555558p-3);
  q = std::fma(q, r, 0x1.000000000000ap-1);
  const double p = 1.0 + std::fma(r * r, q, r);
  const int64_t k = static_cast<int64_t>(std::bit_cast<uint64_t>(t) - std::bit_cast<uint64_t>(shift));
  const int64_t k1 = k >> 1;  // n in [-1077, 1025]
  const double s1 = std::bit_cast<double>(static_cast<uint64_t>(k1 + 1023) << 52);
  const double s2 = std::bit_cast<double>(static_cast<uint64_t>(k - k1 + 1023) << 52);
  return p * s1 * s2;
}
}  // namespace detail

// ---- exp --------------------------------------------------------------------------
// exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n*ln2 (|r| <= ln2/2) with a
// two-constant reduction (the first fma is exact), then exp(r) 2^n by detail::exp_scaled.
// Clamping x first makes overflow/underflow fall out of the same arithmetic, and NaN
// passes every comparison untouched.

[[gnu::always_inline]] inline float exp(float x) {
  x = x > 89.0f ? 89.0f : x;      // exp(89) > FLT_MAX: still overflows to inf
  x = x < -104.0f ? -104.0f : x;  // exp(-104) < 2^-150: still rounds to 0
  // n = nearest integer to x*log2(e), read off the low bits of the shifted sum.
  const float shift = 0x1.8p23f;
  const float t = std::fma(x, 0x1.715476p+0f, shift);
  const float n = t - shift;
  float r = std::fma(-n, 0x1.62e43p-1f, x);
  r = std::fma(-n, -0x1.05c61p-29f, r);
  return detail::exp_scaled(r, t, shift);
}

[[gnu::always_inline]] inline double exp(double x) {
  x = x > 710.0 ? 710.0 : x;      // exp(710) > DBL_MAX
  x = x < -746.0 ? -746.0 : x;    // exp(-746) < 2^-1075
  const double shift = 0x1.8p52;
  const double t = std::fma(x, 0x1.71547652b82fep+0, shift);
  const double n = t - shift;
  double r = std::fma(-n, 0x1.62e42fefa39efp-1, x);
  r = std::fma(-n, 0x1.abc9e3b39803fp-56, r);
  return detail::exp_scaled(r, t, shift);
}

// ---- exp2 -------------------------------------------------------------------------
// exp2(x) = 2^n * exp(r), n = round(x), r = (x - n) ln2 (x - n is exact, |r| <= ln2/2,
// r rounded once by an fma with ln2 split in two), then detail::exp_scaled as for exp.

[[gnu::always_inline]] inline float exp2(float x) {
  x = x > 129.0f ? 129.0f : x;    // 2^129 > FLT_MAX: still overflows to inf
  x = x < -151.0f ? -151.0f : x;  // 2^-151 < 2^-150: still rounds to 0
  const float shift = 0x1.8p23f;
  const float t = x + shift;
  const float n = t - shift;
  const float f = x - n;
  const float r = std::fma(f, 0x1.62e43p-1f, f * -0x1.05c61p-29f);
  return detail::exp_scaled(r, t, shift);
}

[[gnu::always_inline]] inline double exp2(double x) {
  x = x > 1025.0 ? 1025.0 : x;    // 2^1025 > DBL_MAX
  x = x < -1076.0 ? -1076.0 : x;  // 2^-1076 < 2^-1075
  const double shift = 0x1.8p52;
  const double t = x + shift;
  const double n = t - shift;
  const double f = x - n;
  const double r = std::fma(f, 0x1.62e42fefa39efp-1, f * 0x1.abc9e3b39803fp-56);
  return detail::exp_scaled(r, t, shift);
}

// ---- tanh -------------------------------------------------------------------------
// On a = |x|: below 0.625 an odd minimax polynomial a + a^3 P(a^2) (relative error
// 2^-27.8 float, 2^-56.5 double); above, (1 - e)/(1 + e) with e = exp(-2a), whose
// error is damped by 2e/(1-e^2) <= 0.63, and the sum, difference and quotient
// compensated so that only the last step rounds. The sign of x is put back with a
// bit-or (tanh(-0) = -0, NaN stays NaN); for large a, e underflows and the result is 1.

[[gnu::always_inline]] inline float tanh(float x) {
  const uint32_t sign = std::bit_cast<uint32_t>(x) & 0x80000000u;
  const float a = std::bit_cast<float>(std::bit_cast<uint32_t>(x) ^ sign);
  const float a2 = a * a;
  float p = -0x1.75e1d4p-8f;
  p = std::fma(p, a2, 0x1.52269cp-6f);
  p = std::fma(p, a2, -0x1.b83c5ap-5f);
  p = std::fma(p, a2, 0x1.110726p-3f);
  p = std::fma(p, a2, -0x1.555532p-2f);
  const float small = std::fma(a * a2, p, a);
  const float e = ollie_math::exp(-2.0f * a);
  // (d + d_err) / (s + s_err) with d + d_err = 1 - e and s + s_err = 1 + e exactly.
  const float s = 1.0f + e, s_err = e - (s - 1.0f);
  const float d = 1.0f - e, d_err = (1.0f - d) - e;
  const float inv = 1.0f / s;
  const float t0 = d * inv;
  const float res = std::fma(-t0, s, d);  // d - t0*s, exact
  const float large = std::fma(std::fma(-t0, s_err, res + d_err), inv, t0);
  const float t = detail::select(a < 0.625f, small, large);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(t) | sign);
}

[[gnu::always_inline]] inline double tanh(double x) {
  const uint64_t sign = std::bit_cast<uint64_t>(x) & 0x8000000000000000u;
  const double a = std::bit_cast<double>(std::bit_cast<uint64_t>(x) ^ sign);
  const double a2 = a * a;
  double p = -0x1.0da72daaf9ba2p-16;
  p = std::fma(p, a2, 0x1.4391246b1856bp-14);
  p = std::fma(p, a2, -0x1.df557b15d5197p-13);
  p = std::fma(p, a2, 0x1.336613127cfa9p-11);
  p = std::fma(p, a2, -0x1.7d68a3372ddbcp-10);
  p = std::fma(p, a2, 0x1.d6cf280f89d65p-9);
  p = std::fma(p, a2, -0x1.226e162bfdbbcp-7);
  p = std::fma(p, a2, 0x1.664f477adb048p-6);
  p = std::fma(p, a2, -0x1.ba1ba1b5064c5p-5);
  p = std::fma(p, a2, 0x1.111111110accep-3);
  p = std::fma(p, a2, -0x1.55555555554ffp-2);
  const double small = std::fma(a * a2, p, a);
  const double e = ollie_math::exp(-2.0 * a);
  const double s = 1.0 + e, s_err = e - (s - 1.0);
  const double d = 1.0 - e, d_err = (1.0 - d) - e;
  const double inv = 1.0 / s;
  const double t0 = d * inv;
  const double res = std::fma(-t0, s, d);
  const double large = std::fma(std::fma(-t0, s_err, res + d_err), inv, t0);
  const double t = detail::select(a < 0.625, small, large);
  return std::bit_cast<double>(std::bit_cast<uint64_t>(t) | sign);
}

// ---- log --------------------------------------------------------------------------
// x = 2^k * m with m in [sqrt(1/2), sqrt(2)) (subnormal x pre-scaled by 2^23 / 2^52),
// f = m - 1 (exact), s = f / (2 + f), log(1 + f) = 2 atanh(s) = f - hfsq + s (hfsq + R)
// with hfsq = f^2/2 and R(s^2) a minimax polynomial (error 2^-28.4 float, 2^-57.6
// double, as in fdlibm); log(x) = k ln2 + log(1 + f) with ln2 split in two.

[[gnu::always_inline]] inline float log(float x) {
  const bool sub = x < 0x1p-126f;
  const float xs = sub ? x * 0x1p23f : x;
  const uint32_t ix = std::bit_cast<uint32_t>(xs) - 0x3f3504f3u;  // bits of sqrt(1/2)
  const int32_t k = (static_cast<int32_t>(ix) >> 23) - (sub ? 23 : 0);
  const float f = std::bit_cast<float>((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  const float kf = static_cast<float>(k);
  const float s = f / (2.0f + f);
  const float z = s * s;
  float R = 0x1.327374p-2f;
  R = std::fma(R, z, 0x1.995ac6p-2f);
  R = std::fma(R, z, 0x1.55557ap-1f);
  R *= z;
  const float hfsq = 0.5f * f * f;
  const float lo = std::fma(s, hfsq + R, kf * -0x1.05c61p-29f);
  const float y = std::fma(kf, 0x1.62e43p-1f, f - (hfsq - lo));
  // Special inputs: +inf and NaN give x, 0 gives -inf, x < 0 gives NaN.
  const float inf = std::numeric_limits<float>::infinity();
  const float special = x == 0.0f ? -inf : (x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : x);
  return detail::select((x > 0.0f) & (x < inf), y, special);
}

[[gnu::always_inline]] inline double log(double x) {
  const bool sub = x < 0x1p-1022;
  const double xs = sub ? x * 0x1p52 : x;
  const uint64_t ix = std::bit_cast<uint64_t>(xs) - 0x3fe6a09e667f3bcdu;  // bits of sqrt(1/2)
  const int64_t k = (static_cast<int64_t>(ix) >> 52) - (sub ? 52 : 0);
  const double f = std::bit_cast<double>((ix & 0x000fffffffffffffu) + 0x3fe6a09e667f3bcdu) - 1.0;
  const double kf = static_cast<double>(k);
  const double s = f / (2.0 + f);
  const double z = s * s;
  double R = 0x1.2f59344bb061cp-3;
  R = std::fma(R, z, 0x1.399c613190f2dp-3);
  R = std::fma(R, z, 0x1.74664f2799779p-3);
  R = std::fma(R, z, 0x1.c71c529dde8e5p-3);
  R = std::fma(R, z, 0x1.2492493fd0d45p-2);
  R = std::fma(R, z, 0x1.99999999845d8p-2);
  R = std::fma(R, z, 0x1.555555555557cp-1);
  R *= z;
  const double hfsq = 0.5 * f * f;
  const double lo = std::fma(s, hfsq + R, kf * 0x1.abc9e3b39803fp-56);
  const double y = std::fma(kf, 0x1.62e42fefa39efp-1, f - (hfsq - lo));
  // Special inputs: +inf and NaN give x, 0 gives -inf, x < 0 gives NaN.
  const double inf = std::numeric_limits<double>::infinity();
  const double special = x == 0.0 ? -inf : (x < 0.0 ? std::numeric_limits<double>::quiet_NaN() : x);
  return detail::select((x > 0.0) & (x < inf), y, special);
}

// ---- erf --------------------------------------------------------------------------
// On a = |x|: below 1, a (2/sqrt(pi) + a^2 P(a^2)) with P minimax (relative error
// 2^-29.5), the large terms summed with error-free transformations so tiny a is
// rounded once; from 1 on, 1 - exp(-a^2) R(1/a - 0.625) with R a minimax fit of
// erfcx(a) = exp(a^2) erfc(a) on [1, 4] (relative 2^-28.8, damped by erfc/erf <=
// 0.19); a >= 4 gives 1 (erfc(4) < 2^-25). Sign put back as in tanh.

[[gnu::always_inline]] inline float erf(float x) {
  const uint32_t sign = std::bit_cast<uint32_t>(x) & 0x80000000u;
  const float a = std::bit_cast<float>(std::bit_cast<uint32_t>(x) ^ sign);
  const float a2 = a * a;
  float q = 0x1.4b4ba4p-14f;
  q = std::fma(q, a2, -0x1.a4bb5p-11f);
  q = std::fma(q, a2, 0x1.54247ap-8f);
  q = std::fma(q, a2, -0x1.b7fdaep-6f);
  q = std::fma(q, a2, 0x1.ce2d4ep-4f);
  // inner = (a2 + a2_lo) (c3 + a2 q) + c1_lo with a2 * c3, its largest part, rounded once.
  const float a2_lo = std::fma(a, a, -a2);  // a^2 = a2 + a2_lo exactly
  const float c3 = -0x1.81274p-2f;
  const float rest = std::fma(a2 * a2, q, std::fma(a2_lo, c3, -0x1.f7ac92p-25f));
  const float inner = std::fma(a2, c3, rest);
  const float c1 = 0x1.20dd76p+0f;
  const float sum = c1 + inner, sum_err = inner - (sum - c1);  // Fast2Sum: |c1| > |inner|
  const float small = std::fma(a, sum, a * sum_err);
  const float b = a < 1.0f ? 1.0f : (a > 4.0f ? 4.0f : a);  // NaN stays NaN
  const float u = 1.0f / b - 0.625f;  // in [-0.375, 0.375], exact subtraction
  float R = -0x1.2d0468p-5f;
  R = std::fma(R, u, 0x1.a8e066p-6f);
  R = std::fma(R, u, 0x1.7ce7dep-8f);
  R = std::fma(R, u, -0x1.b8a6d4p-6f);
  R = std::fma(R, u, 0x1.60df5ep-5f);
  R = std::fma(R, u, -0x1.809438p-5f);
  R = std::fma(R, u, 0x1.7e5e1ap-6f);
  R = std::fma(R, u, 0x1.668a24p-5f);
  R = std::fma(R, u, -0x1.611094p-3f);
  R = std::fma(R, u, 0x1.877566p-2f);
  R = std::fma(R, u, 0x1.394bbep-2f);
  const float large = 1.0f - ollie_math::exp(-(b * b)) * R;
  const float y = detail::select(a < 1.0f, small, large);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(y) | sign);
}

// No double erf yet: use std::erf for doubles. Deleted so that a double argument is
// an error rather than a silent conversion to float.
double erf(double) = delete;

}  // namespace ollie_math

#endif  // OLLIE_EMIT_KERNEL_MATH_H
