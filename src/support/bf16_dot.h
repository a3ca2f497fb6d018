// The bf16 dot-product micro-kernel that a `bf16_dot` stage calls (docs/schedules.md):
// out[i*o_m + j*o_n] = sum over k of a[i*a_m + k*a_k] * b[k*b_k + j*b_n], float32 sums of
// exact products of bfloat16 values. The emitter pastes this text into kernels that call
// it; tests include it directly.
//
// Each pair of k is one 32-bit word (the layout vdpbf16ps reads): b is packed per call in
// panels of 32 columns, one at a time per thread, a block of rows at a time. A tile of kRows rows
// by 32 columns keeps its sums in 2 * kRows float vectors. AVX512_BF16's vdpbf16ps flushes
// subnormal inputs and results (whatever MXCSR says) and adds the two products of a pair in its own
// order, so a tile uses it only when every nonzero input of its rows of a and its panel of b has
// |x| in [2^-40, 2^41). Such a bfloat16 is a multiple of 2^-47, so every product is 0 or a nonzero
// multiple of 2^-94 (exact in float32), every rounded partial sum stays a multiple of 2^-94, and
// |sum| < K * 2^82: nothing is ever subnormal, infinite or NaN, so the flush never acts and
// the result is a correctly rounded sum of the exact products in some order. Any other tile
// (a subnormal, a huge value, inf or NaN among its inputs) takes the float32 path on the same
// packed data: each pair split into its two floats (a 16-bit shift), multiply-adds in k
// order, as the plain loop adds them. Without AVX512_BF16 every tile takes that path.
#ifndef OLLIE_SUPPORT_BF16_DOT_H
#define OLLIE_SUPPORT_BF16_DOT_H

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__AVX512BF16__) && defined(__AVX512F__) && !defined(OLLIE_BF16_DOT_FMA_ONLY)
#include <immintrin.h>
#define OLLIE_BF16_DOT_VDP 1
#endif

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ollie_dot {

typedef float f32x16 __attribute__((vector_size(64)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));

#if defined(__AVX512F__)
constexpr int64_t kRows = 8;  // 16 accumulators of the 32 registers
#else
constexpr int64_t kRows = 4;
#endif
constexpr int64_t kCols = 32;  // two vectors of 16 pairs

// Whether the vdpbf16ps form is compiled in (the machine reports AVX512_BF16).
constexpr bool kHaveVdp =
#if defined(OLLIE_BF16_DOT_VDP)
    true;
#else
    false;
#endif

// The bit pattern of a bfloat16 element: a 16-bit pattern, a type holding one in `bits`
// (ollie_half::bf16), or a float holding a bfloat16 value (a kernel's local buffers).
template <class T>
inline uint16_t bits(const T& x) {
  if constexpr (std::is_same_v<T, float>)
    return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16);
  else if constexpr (std::is_same_v<T, uint16_t>)
    return x;
  else
    return x.bits;
}

// Zero, or finite with |x| in [2^-40, 2^41) (branch-free, so the packing loops vectorize).
inline uint32_t in_range(uint32_t h) {
  const uint32_t e = (h >> 7) & 0xffu;
  return static_cast<uint32_t>((h & 0x7fffu) == 0) | static_cast<uint32_t>(e - (127u - 40u) <= 80u);
}

inline f32x16 even(u32x16 v) { return std::bit_cast<f32x16>(v << 16); }
inline f32x16 odd(u32x16 v) { return std::bit_cast<f32x16>(v & 0xffff0000u); }

// Pair q of a row of bfloat16 bit patterns (a[2q] in the low half; little-endian).
inline uint32_t pair(const uint16_t* row, int64_t q) {
  uint32_t p;
  std::memcpy(&p, row + 2 * q, sizeof p);
  return p;
}

// The float32 form of a tile: a[r] (kRows rows of pairs) times the packed panel.
inline void tile_fma(const uint16_t* const* a, int64_t k2, const uint32_t* panel,
                     f32x16 (&acc)[kRows][2]) {
  for (int64_t q = 0; q < k2; ++q) {
    u32x16 v[2];
    std::memcpy(v, panel + q * kCols, sizeof v);
    const f32x16 be[2] = {even(v[0]), even(v[1])}, bo[2] = {odd(v[0]), odd(v[1])};
    for (int64_t r = 0; r < kRows; ++r) {
      const uint32_t p = pair(a[r], q);
      const float ae = std::bit_cast<float>(p << 16), ao = std::bit_cast<float>(p & 0xffff0000u);
      for (int h = 0; h < 2; ++h) {
        acc[r][h] += ae * be[h];
        acc[r][h] += ao * bo[h];
      }
    }
  }
}

#if defined(OLLIE_BF16_DOT_VDP)
// The vdpbf16ps form: one instruction per pair of k and 16 columns.
inline void tile_vdp(const uint16_t* const* a, int64_t k2, const uint32_t* panel,
                     f32x16 (&acc)[kRows][2]) {
  __m512 c[kRows][2];
  for (int64_t r = 0; r < kRows; ++r)
    for (int h = 0; h < 2; ++h) c[r][h] = std::bit_cast<__m512>(acc[r][h]);
  for (int64_t q = 0; q < k2; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(panel + q * kCols);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(panel + q * kCols + 16);
    for (int64_t r = 0; r < kRows; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair(a[r], q)));
      c[r][0] = _mm512_dpbf16_ps(c[r][0], av, b0);
      c[r][1] = _mm512_dpbf16_ps(c[r][1], av, b1);
    }
  }
  for (int64_t r = 0; r < kRows; ++r)
    for (int h = 0; h < 2; ++h) acc[r][h] = std::bit_cast<f32x16>(c[r][h]);
}
#else
inline void tile_vdp(const uint16_t* const* a, int64_t k2, const uint32_t* panel,
                     f32x16 (&acc)[kRows][2]) {
  tile_fma(a, k2, panel, acc);
}
#endif

// Panel p of b: k2 rows of kCols pairs (b[2q][j], b[2q + 1][j]), zeros past the edges.
// Returns whether every element is in range. A whole panel of contiguous rows takes a loop
// the compiler vectorizes.
template <class T>
bool pack_b(const T* b, int64_t b_k, int64_t b_n, int64_t n, int64_t k, int64_t p, uint32_t* out) {
  uint32_t ok = 1;
  const int64_t j0 = p * kCols;
  for (int64_t q = 0; q < (k + 1) / 2; ++q) {
    const int64_t k0 = 2 * q;
    uint32_t* row = out + q * kCols;
    if (b_n == 1 && j0 + kCols <= n && k0 + 1 < k) {
      const T* r0 = b + k0 * b_k + j0;
      const T* r1 = r0 + b_k;
      for (int64_t c = 0; c < kCols; ++c) {
        const uint32_t lo = bits(r0[c]), hi = bits(r1[c]);
        row[c] = lo | hi << 16;
        ok &= in_range(lo) & in_range(hi);
      }
      continue;
    }
    for (int64_t c = 0; c < kCols; ++c) {
      const int64_t j = j0 + c;
      const uint32_t lo = j < n ? bits(b[k0 * b_k + j * b_n]) : 0;
      const uint32_t hi = j < n && k0 + 1 < k ? bits(b[(k0 + 1) * b_k + j * b_n]) : 0;
      row[c] = lo | hi << 16;
      ok &= in_range(lo) & in_range(hi);
    }
  }
  return ok != 0;
}

// Row i of a as k2 pairs. Returns whether every element is in range.
template <class T>
bool pack_a(const T* a, int64_t a_m, int64_t a_k, int64_t k, int64_t i, uint32_t* out) {
  uint32_t ok = 1;
  const T* row = a + i * a_m;
  if (a_k == 1) {
    for (int64_t q = 0; q < k / 2; ++q) {
      const uint32_t lo = bits(row[2 * q]), hi = bits(row[2 * q + 1]);
      out[q] = lo | hi << 16;
      ok &= in_range(lo) & in_range(hi);
    }
  } else {
    for (int64_t q = 0; q < k / 2; ++q) {
      const uint32_t lo = bits(row[2 * q * a_k]), hi = bits(row[(2 * q + 1) * a_k]);
      out[q] = lo | hi << 16;
      ok &= in_range(lo) & in_range(hi);
    }
  }
  if (k % 2) {
    const uint32_t lo = bits(row[(k - 1) * a_k]);
    out[k / 2] = lo;
    ok &= in_range(lo);
  }
  return ok != 0;
}

// Stores the tile's rows and columns that fall inside the output.
inline void store(const f32x16 (&acc)[kRows][2], float* out, int64_t o_m, int64_t o_n, int64_t m,
                  int64_t n, int64_t i0, int64_t j0) {
  for (int64_t r = 0; r < kRows && i0 + r < m; ++r)
    for (int h = 0; h < 2; ++h) {
      const int64_t j = j0 + 16 * h, count = std::min<int64_t>(16, n - j);
      float* row = out + (i0 + r) * o_m + j * o_n;
      if (count == 16 && o_n == 1) {
        std::memcpy(row, &acc[r][h], sizeof acc[r][h]);
        continue;
      }
      for (int64_t l = 0; l < count; ++l) row[l * o_n] = acc[r][h][l];
    }
}

// The threads the call may use (1 outside OpenMP).
inline int64_t threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Block blk of a (kRows rows) packed by the first task that needs it: its state goes
// 0 (not packed) -> 1 (being packed) -> 2 (packed, in range) or 3 (packed, out of range);
// a task that finds another packing it waits for the state to change (a few microseconds
// of copying), so no task waits for the whole of a to be packed.
template <class T>
bool block_in_range(const T* a, int64_t a_m, int64_t a_k, int64_t k, int64_t m, int64_t width,
                    int64_t blk, uint32_t* ap, std::atomic<signed char>& state) {
  signed char s = state.load(std::memory_order_acquire);
  signed char expected = 0;
  if (s == 0 && state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    bool ok = true;
    for (int64_t i = blk * kRows; i < std::min(m, (blk + 1) * kRows); ++i)
      ok = pack_a(a, a_m, a_k, k, i, ap + i * width) && ok;
    state.store(ok ? 2 : 3, std::memory_order_release);
    return ok;
  }
  while ((s = state.load(std::memory_order_acquire)) < 2) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return s == 2;
}

// Tasks are a panel of b by a group of row blocks: each packs its panel (kept in the
// thread's L2 while the group's rows of a stream past it) and runs the group's tiles.
// Panels are split into groups of rows only as far as the threads need work (each group
// packs its panel again). The tasks never wait at a barrier (a is packed block by block
// as they first need it), so a thread that loses its core does not stall the others.
template <class TA, class TB>
void run(const TA* a, int64_t a_m, int64_t a_k, const TB* b, int64_t b_k, int64_t b_n, float* out,
         int64_t o_m, int64_t o_n, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0) return;
  const int64_t k2 = (k + 1) / 2, width = std::max<int64_t>(k2, 1);
  const int64_t panels = (n + kCols - 1) / kCols, blocks = (m + kRows - 1) / kRows;
  const int64_t groups =
      std::min(blocks, std::max<int64_t>(1, (4 * threads() + panels - 1) / panels));
  const int64_t per_group = (blocks + groups - 1) / groups;
  const std::unique_ptr<uint32_t[]> ap(new uint32_t[static_cast<size_t>(m * width)]);
  const std::unique_ptr<std::atomic<signed char>[]> a_state(
      new std::atomic<signed char>[static_cast<size_t>(blocks)]());
  [[maybe_unused]] const bool big = m * n * std::max<int64_t>(k, 1) >= (int64_t{1} << 18);
#pragma omp parallel if (big)
  {
    const std::unique_ptr<uint32_t[]> panel(new uint32_t[static_cast<size_t>(width * kCols)]);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < panels * groups; ++task) {
      const int64_t p = task / groups, g = task % groups;
      const bool b_ok = pack_b(b, b_k, b_n, n, k, p, panel.get());
      for (int64_t blk = g * per_group; blk < std::min(blocks, (g + 1) * per_group); ++blk) {
        const bool a_ok = block_in_range(a, a_m, a_k, k, m, width, blk, ap.get(), a_state[blk]);
        const uint16_t* rows[kRows];  // rows past m repeat the last one; they are not stored
        for (int64_t r = 0; r < kRows; ++r)
          rows[r] = reinterpret_cast<const uint16_t*>(ap.get() +
                                                      std::min(m - 1, blk * kRows + r) * width);
        f32x16 acc[kRows][2] = {};
        if (kHaveVdp && a_ok && b_ok)
          tile_vdp(rows, k2, panel.get(), acc);
        else
          tile_fma(rows, k2, panel.get(), acc);
        store(acc, out, o_m, o_n, m, n, blk * kRows, p * kCols);
      }
    }
  }
}

}  // namespace ollie_dot

// The call a bf16_dot stage is emitted as (a, b: bfloat16 elements; out: float).
template <class TA, class TB>
inline void ollie_bf16_dot(const TA* a, int64_t a_m, int64_t a_k, const TB* b, int64_t b_k,
                           int64_t b_n, float* out, int64_t o_m, int64_t o_n, int64_t m, int64_t n,
                           int64_t k) {
  ollie_dot::run(a, a_m, a_k, b, b_k, b_n, out, o_m, o_n, m, n, k);
}

#pragma GCC diagnostic pop

#endif  // OLLIE_SUPPORT_BF16_DOT_H
