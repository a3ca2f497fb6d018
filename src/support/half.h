// float16 and bfloat16 as 16-bit patterns: bit-exact conversions to and from float and
// double, rounding to nearest even exactly as numpy (float16) and ml_dtypes (bfloat16) do,
// with integer operations only (no dependence on the FPU's flush-to-zero or rounding
// mode). The host code (reference, runner, .npy files) includes it; the emitter pastes the
// same text into every kernel that touches a 16-bit float (hence include guards and a
// namespace of its own). tests/numpy/test_half.py checks every conversion against numpy
// and ml_dtypes: all 2^16 patterns each way and a sweep of float32 and float64 values.
#ifndef OLLIE_SUPPORT_HALF_H
#define OLLIE_SUPPORT_HALF_H

#include <bit>
#include <cstdint>

namespace ollie_half {

// float16 -> float: exact.
[[gnu::always_inline]] inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f)  // inf or NaN: the payload moves up as is (numpy)
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
}

// bfloat16 -> float: exact (the top half of a float).
[[gnu::always_inline]] inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

namespace detail {
// Round to nearest even of m >> shift (shift >= 1).
[[gnu::always_inline]] inline uint64_t shift_rne(uint64_t m, int shift) {
  const uint64_t q = m >> shift, rest = m & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  return q + static_cast<uint64_t>(rest > half || (rest == half && (q & 1)));
}
}  // namespace detail

// float -> float16, as numpy's npy_floatbits_to_halfbits: round to nearest even; past
// 65520 (65504 plus half its spacing) to inf; subnormal results kept; a NaN keeps its
// sign and the top 10 bits of its payload (at least one set).
[[gnu::always_inline]] inline uint16_t float_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) {
    const uint32_t payload = (a & 0x7fffffu) >> 13;
    return static_cast<uint16_t>(sign | 0x7c00u | (payload ? payload : 1u));
  }
  if (a >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 2^16: inf
  if (a >= 0x38800000u) {  // >= 2^-14: normal (or rounds up to inf past 65520)
    const uint32_t rebased = a - (112u << 23);
    return static_cast<uint16_t>(sign | ((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13));
  }
  if (a < 0x33000000u) return sign;  // below 2^-25: rounds to zero
  // Subnormal: mantissa (with its leading 1) * 2^(e - 150) in units of 2^-24.
  const int e = static_cast<int>(a >> 23);
  const uint64_t m = (a & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | detail::shift_rne(m, 126 - e));
}

// double -> float16 directly (one rounding, as numpy's npy_doublebits_to_halfbits: not
// through float, which could round twice).
[[gnu::always_inline]] inline uint16_t double_to_f16(double d) {
  const uint64_t x = std::bit_cast<uint64_t>(d);
  const uint16_t sign = static_cast<uint16_t>((x >> 48) & 0x8000u);
  const uint64_t a = x & 0x7fffffffffffffffULL;
  if (a > 0x7ff0000000000000ULL) {
    const uint64_t payload = (a & 0xfffffffffffffULL) >> 42;
    return static_cast<uint16_t>(sign | 0x7c00u | (payload ? payload : 1u));
  }
  // >= 2^16: inf; >= 2^-14: normal (or rounds up to inf past 65520).
  if (a >= 0x40f0000000000000ULL) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x3f10000000000000ULL) {
    const uint64_t rebased = a - (1008ULL << 52);
    const uint64_t bias = (uint64_t{1} << 41) - 1 + ((rebased >> 42) & 1u);
    return static_cast<uint16_t>(sign | ((rebased + bias) >> 42));
  }
  if (a < 0x3e60000000000000ULL) return sign;  // below 2^-25
  const int e = static_cast<int>(a >> 52);
  const uint64_t m = (a & 0xfffffffffffffULL) | (uint64_t{1} << 52);
  return static_cast<uint16_t>(sign | detail::shift_rne(m, 1051 - e));
}

// float -> bfloat16, as ml_dtypes: round to nearest even (overflow to inf, subnormals
// kept); every NaN becomes the quiet NaN 0x7fc0 with its sign.
[[gnu::always_inline]] inline uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// double -> bfloat16 as ml_dtypes casts it: through float (two roundings).
[[gnu::always_inline]] inline uint16_t double_to_bf16(double d) {
  return float_to_bf16(static_cast<float>(d));
}

// A value rounded to the 16-bit type and back, as the kernels hold them (in float).
[[gnu::always_inline]] inline float round_f16(float f) { return f16_to_float(float_to_f16(f)); }
[[gnu::always_inline]] inline float round_f16(double d) { return f16_to_float(double_to_f16(d)); }
[[gnu::always_inline]] inline float round_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }
[[gnu::always_inline]] inline float round_bf16(double d) {
  return bf16_to_float(double_to_bf16(d));
}

// The kernels' storage types: a 16-bit pattern that reads as float and rounds on
// assignment, so that a generated kernel loads and stores it like a float buffer.
struct f16 {
  uint16_t bits;
  [[gnu::always_inline]] operator float() const { return f16_to_float(bits); }
  [[gnu::always_inline]] f16& operator=(float v) {
    bits = float_to_f16(v);
    return *this;
  }
};
struct bf16 {
  uint16_t bits;
  [[gnu::always_inline]] operator float() const { return bf16_to_float(bits); }
  [[gnu::always_inline]] bf16& operator=(float v) {
    bits = float_to_bf16(v);
    return *this;
  }
};

}  // namespace ollie_half

#endif  // OLLIE_SUPPORT_HALF_H
