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

#if defined(__F16C__) || defined(__AVX512BF16__)
#include <immintrin.h>
#endif

// Every function here is inlined: GCC's note that passing a vector without AVX changes
// the ABI does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ollie_half {

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

// The float <-> float16/bfloat16 formulas below take U = uint32_t or a GCC vector of
// uint32_t (bit patterns, one per lane) and are written without branches (selects only),
// so that one text serves the scalar conversions, which a vectorized loop keeps vectorized,
// and the explicit vector ones (ollie_vload / ollie_vstore).
template <class U>
[[gnu::always_inline]] inline U splat(uint32_t c) {
  if constexpr (sizeof(U) == sizeof(uint32_t))
    return c;
  else
    return U{} + c;
}
// c ? a : b lane by lane, as masks (a scalar select left as a ternary may become a branch,
// and GCC does not vectorize a loop with one).
template <class U, class C>
[[gnu::always_inline]] inline U pick(C c, U a, U b) {
  if constexpr (sizeof(U) == sizeof(uint32_t)) {
    const U mask = 0u - static_cast<U>(c);
    return (a & mask) | (b & ~mask);
  } else {
    return c ? a : b;
  }
}
template <class U, class F>
[[gnu::always_inline]] inline F to_float(U m) {
  if constexpr (sizeof(U) == sizeof(uint32_t))
    return static_cast<F>(m);
  else
    return __builtin_convertvector(m, F);
}

// float16 -> float: exact; an inf or NaN keeps its payload, moved up (numpy).
template <class U, class F>
[[gnu::always_inline]] inline U f16_bits_to_float_bits(U h) {
  const U sign = (h & 0x8000u) << 16;
  const U exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  const U normal = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  const U special = sign | 0x7f800000u | (mantissa << 13);
  // Zero or subnormal: mantissa * 2^-24, exact in float whatever the rounding mode.
  const U small = sign | std::bit_cast<U>(to_float<U, F>(mantissa) * 0x1p-24f);
  return pick(exponent == 0x1fu, special, pick(exponent != 0u, normal, small));
}

// float -> float16 as numpy's npy_floatbits_to_halfbits (see float_to_f16).
template <class U>
[[gnu::always_inline]] inline U float_bits_to_f16_bits(U x) {
  const U sign = (x >> 16) & 0x8000u;
  const U a = x & 0x7fffffffu;
  const U payload = (a & 0x7fffffu) >> 13;
  const U nan = sign | 0x7c00u | payload | pick(payload == 0u, splat<U>(1u), splat<U>(0u));
  const U inf = sign | 0x7c00u;
  const U rebased = a - (112u << 23);
  const U normal = sign | ((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13);
  // Subnormal result (2^-25 <= a < 2^-14): the mantissa with its leading 1, shifted right
  // by 126 - e (14..24) and rounded to nearest even; the shift clamped for other lanes.
  const U e = a >> 23;
  const U clamped = pick(e < 102u, splat<U>(102u), pick(e > 125u, splat<U>(125u), e));
  const U shift = 126u - clamped;
  const U m = (a & 0x7fffffu) | 0x800000u;
  const U q = m >> shift, rest = m & ((splat<U>(1u) << shift) - 1u);
  const U half = splat<U>(1u) << (shift - 1u);
  const U up = pick(rest > half, splat<U>(1u), pick(rest == half, q & 1u, splat<U>(0u)));
  const U sub = sign | (q + up);
  // NaN; >= 2^16: inf; >= 2^-14: normal (or up to inf past 65520); below 2^-25: zero.
  return pick(a > 0x7f800000u, nan,
              pick(a >= 0x47800000u, inf,
                   pick(a >= 0x38800000u, normal, pick(a < 0x33000000u, sign, sub))));
}

// float -> bfloat16 as ml_dtypes (see float_to_bf16).
template <class U>
[[gnu::always_inline]] inline U float_bits_to_bf16_bits(U x) {
  const U rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const U nan = ((x >> 16) & 0x8000u) | 0x7fc0u;
  return pick((x & 0x7fffffffu) > 0x7f800000u, nan, rounded);
}
}  // namespace detail

// float16 -> float: exact.
[[gnu::always_inline]] inline float f16_to_float(uint16_t h) {
  return std::bit_cast<float>(detail::f16_bits_to_float_bits<uint32_t, float>(h));
}

// float -> float16, as numpy's npy_floatbits_to_halfbits: round to nearest even; past
// 65520 (65504 plus half its spacing) to inf; subnormal results kept; a NaN keeps its
// sign and the top 10 bits of its payload (at least one set).
[[gnu::always_inline]] inline uint16_t float_to_f16(float f) {
  return static_cast<uint16_t>(detail::float_bits_to_f16_bits(std::bit_cast<uint32_t>(f)));
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
  return static_cast<uint16_t>(detail::float_bits_to_bf16_bits(std::bit_cast<uint32_t>(f)));
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

// Vectors of 8 and 16 lanes (the kernels' ollie_f32x8 / ollie_f32x16 are the same types),
// read from and written to 16-bit buffers: ollie_vload<V>(p) and ollie_vstore(p, v), found
// by argument-dependent lookup where a kernel's vector form loads or stores an f16 or bf16
// buffer, and where a plain vectorized loop converts its 16-bit loads and stores a block of
// 16 at a time (emit/half_blocks.cpp). With the machine's instructions where the compiler
// targets them (-march=native on a CPU that reports them): F16C's vcvtph2ps / vcvtps2ph
// (round to nearest even) and AVX512_BF16's vcvtneps2bf16. Those differ from numpy and
// ml_dtypes in NaN payloads (they quiet a signalling NaN; vcvtneps2bf16 keeps a payload
// ml_dtypes drops) and vcvtneps2bf16 flushes subnormal inputs to zero, so a vector holding
// such a lane (rare: one test and a branch per vector) is converted by the integer
// formulas instead: bit-exact with the scalar conversions for every input. Elsewhere, the
// integer formulas lane by lane.
typedef float f32x16 __attribute__((vector_size(64)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef uint16_t u16x16 __attribute__((vector_size(32)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));

template <class V>
struct lanes_of;
template <>
struct lanes_of<f32x16> {
  using U = u32x16;
  using H = u16x16;
};
template <>
struct lanes_of<f32x8> {
  using U = u32x8;
  using H = u16x8;
};

template <class V>
[[gnu::always_inline]] inline typename lanes_of<V>::U load_bits(const void* p) {
  typename lanes_of<V>::H h;
  __builtin_memcpy(&h, p, sizeof h);
  return __builtin_convertvector(h, typename lanes_of<V>::U);
}
template <class V>
[[gnu::always_inline]] inline void store_bits(void* p, typename lanes_of<V>::U u) {
  const auto h = __builtin_convertvector(u, typename lanes_of<V>::H);
  __builtin_memcpy(p, &h, sizeof h);
}

template <class V>
[[gnu::always_inline]] inline V ollie_vload(const bf16* p) {
  return std::bit_cast<V>(load_bits<V>(p) << 16);
}

#if defined(__F16C__)
// Whether some lane of the float16 patterns at p (as many as V has lanes) is a NaN.
template <class V>
[[gnu::always_inline]] inline bool any_f16_nan(const void* p) {
#if defined(__AVX2__)
  if constexpr (sizeof(V) == 64) {
    const __m256i h = _mm256_loadu_si256(static_cast<const __m256i*>(p));
    const __m256i a = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
    return _mm256_movemask_epi8(_mm256_cmpgt_epi16(a, _mm256_set1_epi16(0x7c00))) != 0;
  }
#endif
  if constexpr (sizeof(V) == 64)  // two halves of 8
    return any_f16_nan<f32x8>(p) || any_f16_nan<f32x8>(static_cast<const uint16_t*>(p) + 8);
  const __m128i h = _mm_loadu_si128(static_cast<const __m128i*>(p));
  const __m128i a = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
  return _mm_movemask_epi8(_mm_cmpgt_epi16(a, _mm_set1_epi16(0x7c00))) != 0;
}
// Whether some lane of v is a NaN.
template <class V>
[[gnu::always_inline]] inline bool any_nan(const V& v) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) {
    const __m512 x = std::bit_cast<__m512>(v);
    return _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q) != 0;
  }
#endif
  if constexpr (sizeof(V) == 32) {
    const __m256 x = std::bit_cast<__m256>(v);
    return _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0;
  }
  return true;  // no vector form: the caller takes the integer formula
}
#endif

template <class V>
[[gnu::always_inline]] inline V ollie_vload(const f16* p) {
#if defined(__F16C__)
  if (!any_f16_nan<V>(p)) {
#if defined(__AVX512F__)
    if constexpr (sizeof(V) == 64)
      return std::bit_cast<V>(
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#else
    if constexpr (sizeof(V) == 64) {  // two halves of 8
      const f32x8 lo = ollie_vload<f32x8>(p), hi = ollie_vload<f32x8>(p + 8);
      return V{lo[0], lo[1], lo[2], lo[3], lo[4], lo[5], lo[6], lo[7],
               hi[0], hi[1], hi[2], hi[3], hi[4], hi[5], hi[6], hi[7]};
    }
#endif
    if constexpr (sizeof(V) == 32)
      return std::bit_cast<V>(
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
#endif
  using U = typename lanes_of<V>::U;
  return std::bit_cast<V>(detail::f16_bits_to_float_bits<U, V>(load_bits<V>(p)));
}

template <class V>
[[gnu::always_inline]] inline void ollie_vstore(bf16* p, const V& v) {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
  // fpclass 0xa1: a quiet or signalling NaN, or a subnormal.
  if constexpr (sizeof(V) == 64) {
    const __m512 x = std::bit_cast<__m512>(v);
    if (!_mm512_fpclass_ps_mask(x, 0xa1)) {
      const __m256bh r = _mm512_cvtneps_pbh(x);
      __builtin_memcpy(p, &r, sizeof r);
      return;
    }
  }
  if constexpr (sizeof(V) == 32) {
    const __m256 x = std::bit_cast<__m256>(v);
    if (!_mm256_fpclass_ps_mask(x, 0xa1)) {
      const __m128bh r = _mm256_cvtneps_pbh(x);
      __builtin_memcpy(p, &r, sizeof r);
      return;
    }
  }
#endif
  using U = typename lanes_of<V>::U;
  store_bits<V>(p, detail::float_bits_to_bf16_bits(std::bit_cast<U>(v)));
}

template <class V>
[[gnu::always_inline]] inline void ollie_vstore(f16* p, const V& v) {
#if defined(__F16C__)
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  if (!any_nan(v)) {
#if defined(__AVX512F__)
    if constexpr (sizeof(V) == 64) {
      const __m256i r = _mm512_cvtps_ph(std::bit_cast<__m512>(v), kNearest);
      __builtin_memcpy(p, &r, sizeof r);
      return;
    }
#else
    if constexpr (sizeof(V) == 64) {  // two halves of 8
      ollie_vstore(p, f32x8{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]});
      ollie_vstore(p + 8, f32x8{v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]});
      return;
    }
#endif
    if constexpr (sizeof(V) == 32) {
      const __m128i r = _mm256_cvtps_ph(std::bit_cast<__m256>(v), kNearest);
      __builtin_memcpy(p, &r, sizeof r);
      return;
    }
  }
#endif
  using U = typename lanes_of<V>::U;
  store_bits<V>(p, detail::float_bits_to_f16_bits(std::bit_cast<U>(v)));
}

}  // namespace ollie_half

#pragma GCC diagnostic pop

#endif  // OLLIE_SUPPORT_HALF_H
