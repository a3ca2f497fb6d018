// WRONG (subnormal handling): the guarded vdpbf16ps matmul of the blue team
// (tests/blueteam/matmul_bf16__vdpbf16ps_guarded.cpp) without its guard: every tile uses
// vdpbf16ps, which flushes subnormal bfloat16 inputs, products and partial sums to zero
// whatever MXCSR says (DAZ/FTZ are part of the instruction). On ordinary data it is right
// (the pair order is a summation order the bound allows); on the verifier's subnormal
// inputs (a at 2^-126, most of it bf16 subnormals) its results lose those terms. Without
// AVX512_BF16 a scalar emulation of the same flushes stands in.
// expect: wrong
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t kRows = 8, kCols = 32;

// BUG: no guard; every value counts as safe for vdpbf16ps.
inline bool in_range(uint16_t) { return true; }

// Panel p of B (columns 32p .. 32p + 31) as K2 = ceil(K / 2) rows of 32 pairs: pair c of
// row q is (b[2q][32p + c], b[2q + 1][32p + c]), zero past the edges. Returns whether
// every element is in range.
bool pack_panel(const uint16_t* b, int64_t K, int64_t N, int64_t p, uint16_t* out) {
  bool ok = true;
  const int64_t j0 = p * kCols, K2 = (K + 1) / 2;
  for (int64_t q = 0; q < K2; ++q) {
    uint16_t* row = out + q * 2 * kCols;
    for (int64_t c = 0; c < kCols; ++c) {
      const int64_t j = j0 + c, k = 2 * q;
      const uint16_t lo = j < N ? b[k * N + j] : 0;
      const uint16_t hi = j < N && k + 1 < K ? b[(k + 1) * N + j] : 0;
      row[2 * c] = lo;
      row[2 * c + 1] = hi;
      ok = ok && in_range(lo) && in_range(hi);
    }
  }
  return ok;
}

// The pair a[i][2q], a[i][2q + 1] of row i as one 32-bit word (zero past K).
inline uint32_t a_pair(const uint16_t* arow, int64_t K, int64_t q) {
  uint32_t w;
  if (2 * q + 1 < K) {
    std::memcpy(&w, arow + 2 * q, 4);  // little-endian: a[2q] in the low half
    return w;
  }
  return arow[2 * q];
}

// The float32 FMA form of a tile: each pair vector split into its even-k and odd-k floats.
void tile_fma(const uint16_t* a, int64_t K, const int64_t* rows, const uint16_t* panel,
              __m512 acc[kRows][2]) {
  const int64_t K2 = (K + 1) / 2;
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t q = 0; q < K2; ++q) {
    __m512 be[2], bo[2];
    for (int h = 0; h < 2; ++h) {
      const __m512i v = _mm512_loadu_si512(panel + q * 2 * kCols + h * 32);
      be[h] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      bo[h] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
    }
    for (int64_t r = 0; r < kRows; ++r) {
      const uint32_t pair = a_pair(a + rows[r] * K, K, q);
      float ae, ao;
      const uint32_t e = pair << 16, o = pair & 0xffff0000u;
      std::memcpy(&ae, &e, 4);
      std::memcpy(&ao, &o, 4);
      const __m512 ve = _mm512_set1_ps(ae), vo = _mm512_set1_ps(ao);
      for (int h = 0; h < 2; ++h) {
        acc[r][h] = _mm512_fmadd_ps(ve, be[h], acc[r][h]);
        acc[r][h] = _mm512_fmadd_ps(vo, bo[h], acc[r][h]);
      }
    }
  }
}

#if defined(__AVX512BF16__) && !defined(OLLIE_FMA_ONLY)
constexpr bool kHaveDp = true;
// The vdpbf16ps form of a tile: one instruction per pair of k and 16 columns.
void tile_dp(const uint16_t* a, int64_t K, const int64_t* rows, const uint16_t* panel,
             __m512 acc[kRows][2]) {
  const int64_t K2 = (K + 1) / 2;
  for (int64_t q = 0; q < K2; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(panel + q * 2 * kCols);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(panel + q * 2 * kCols + 32);
    for (int64_t r = 0; r < kRows; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a_pair(a + rows[r] * K, K, q)));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
}
#else
constexpr bool kHaveDp = true;
// Without AVX512_BF16: what vdpbf16ps does, in scalar code (subnormal inputs, products and
// sums read or written as zero).
inline float flush(float x) { return std::fabs(x) < 0x1p-126f ? 0.0f * x : x; }
inline float bf16_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return flush(f);
}
void tile_dp(const uint16_t* a, int64_t K, const int64_t* rows, const uint16_t* panel,
             __m512 acc[kRows][2]) {
  float c[kRows][kCols];
  for (int64_t r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c[r], acc[r][0]);
    _mm512_storeu_ps(c[r] + 16, acc[r][1]);
  }
  for (int64_t q = 0; q < (K + 1) / 2; ++q)
    for (int64_t r = 0; r < kRows; ++r) {
      const uint32_t pair = a_pair(a + rows[r] * K, K, q);
      for (int64_t j = 0; j < kCols; ++j) {
        const uint16_t* bp = panel + q * 2 * kCols + 2 * j;
        const float odd = flush(bf16_float(static_cast<uint16_t>(pair >> 16)) * bf16_float(bp[1]));
        const float even = flush(bf16_float(static_cast<uint16_t>(pair)) * bf16_float(bp[0]));
        c[r][j] = flush(flush(c[r][j] + odd) + even);
      }
    }
  for (int64_t r = 0; r < kRows; ++r) {
    acc[r][0] = _mm512_loadu_ps(c[r]);
    acc[r][1] = _mm512_loadu_ps(c[r] + 16);
  }
}
#endif

}  // namespace

extern "C" void ollie_kernel(const uint16_t* a, const uint16_t* b, float* out0,
                             const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  if (M <= 0 || N <= 0) return;
  const int64_t panels = (N + kCols - 1) / kCols, K2 = (K + 1) / 2;
  const int64_t blocks = (M + kRows - 1) / kRows;
  std::vector<uint16_t> packed(static_cast<size_t>(std::max<int64_t>(1, panels * K2 * 2 * kCols)));
  std::vector<char> panel_ok(static_cast<size_t>(panels)), block_ok(static_cast<size_t>(blocks));
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels; ++p)
      panel_ok[static_cast<size_t>(p)] = pack_panel(b, K, N, p, packed.data() + p * K2 * 2 * kCols);
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      bool ok = true;
      for (int64_t i = blk * kRows; i < std::min(M, (blk + 1) * kRows); ++i)
        for (int64_t k = 0; k < K; ++k) ok = ok && in_range(a[i * K + k]);
      block_ok[static_cast<size_t>(blk)] = ok;
    }
#pragma omp for schedule(static) collapse(2)
    for (int64_t blk = 0; blk < blocks; ++blk)
      for (int64_t p = 0; p < panels; ++p) {
        int64_t rows[kRows];  // rows past M repeat the last one; they are not stored
        for (int64_t r = 0; r < kRows; ++r) rows[r] = std::min(M - 1, blk * kRows + r);
        __m512 acc[kRows][2];
        for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
        const uint16_t* panel = packed.data() + p * K2 * 2 * kCols;
        if (kHaveDp && block_ok[static_cast<size_t>(blk)] && panel_ok[static_cast<size_t>(p)])
          tile_dp(a, K, rows, panel, acc);
        else
          tile_fma(a, K, rows, panel, acc);
        const int64_t j0 = p * kCols, left = N - j0;
        const __mmask16 m0 = left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1u);
        const __mmask16 m1 =
            left >= 32 ? 0xffff
                       : (left > 16 ? static_cast<__mmask16>((1u << (left - 16)) - 1u) : 0);
        for (int64_t r = 0; r < kRows && blk * kRows + r < M; ++r) {
          float* crow = out0 + (blk * kRows + r) * N + j0;
          _mm512_mask_storeu_ps(crow, m0, acc[r][0]);
          _mm512_mask_storeu_ps(crow + 16, m1, acc[r][1]);
        }
      }
  }
}
