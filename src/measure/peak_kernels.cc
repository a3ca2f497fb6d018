// The calibration kernels: ollie's own, trusted code. This file is NOT compiled into ollie
// (the stage globs *.cpp only): CMake pastes its text into the measure stage as a string
// literal (generated/measure/peak_kernels_text.inc), and calibrate() compiles that text with
// the build driver at the candidates' flags (-O3 -march=native -fopenmp), so the widest
// vectors of this machine are used, then dlopens the shared object inside the ollie process
// and calls the functions below. Keep it free of at-sign pairs (configure_file @ONLY) and of
// the raw string's closing delimiter (see peak_kernels_text.inc.in).
#include <cstdint>

#include <omp.h>

#if defined(__AVX512F__) || (defined(__AVX__) && defined(__FMA__))
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace {

// One FMA "chain" is one vector register updated by acc = acc * mul + add. An FMA has a
// latency of 4-5 cycles and most cores issue two per cycle, so at least 8-10 independent
// chains are needed to keep both units busy; 16 with AVX-512 (32 vector registers), 12
// with AVX2 (16 registers, 2 of them hold the constants).
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
constexpr int kChains = 16;
inline Vec vset(float x) { return _mm512_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float vsum(Vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__AVX__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr int kChains = 12;
inline Vec vset(float x) { return _mm256_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float vsum(Vec v) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}
#elif defined(__ARM_NEON)
using Vec = float32x4_t;
constexpr int kLanes = 4;
constexpr int kChains = 16;
inline Vec vset(float x) { return vdupq_n_f32(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return vfmaq_f32(c, a, b); }
inline float vsum(Vec v) { return vaddvq_f32(v); }
#else
// No FMA instructions known: plain vector multiply-add (two instructions on such a
// machine; still counted as 2 FLOPs per lane, which is what a kernel could reach).
typedef float Vec __attribute__((vector_size(16)));
constexpr int kLanes = 4;
constexpr int kChains = 12;
inline Vec vset(float x) { return Vec{x, x, x, x}; }
inline Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
inline float vsum(Vec v) { return v[0] + v[1] + v[2] + v[3]; }
#endif

// iters x kChains dependent-per-chain FMAs; the sum is returned so nothing is dead code.
// mul < 1 and a small add keep every accumulator near 0.1..1: no overflow, no subnormals.
float fma_chains(int64_t iters) {
  Vec acc[kChains];
#pragma GCC unroll 16
  for (int j = 0; j < kChains; ++j) acc[j] = vset(1.0f + 0.001f * static_cast<float>(j));
  const Vec mul = vset(0.999999f);
  const Vec add = vset(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) acc[j] = vfma(acc[j], mul, add);
  }
  Vec total = acc[0];
#pragma GCC unroll 16
  for (int j = 1; j < kChains; ++j) total += acc[j];
  return vsum(total);
}

// Low-precision chains, FLOPs per step and thread in *_flops_per_iter (0 where this build
// has no such instruction). AVX512_BF16's vdpbf16ps adds two bfloat16 products to each
// float32 lane: 4 FLOPs per lane. AVX512_FP16's vfmadd*ph: 32 float16 lanes, 2 FLOPs each.
// The operands keep every accumulator small and finite (2^-30 added per step).
constexpr int kLowChains = 16;
#if defined(__AVX512BF16__)
float bf16_dot_chains(int64_t iters) {
  __m512 acc[kLowChains];
#pragma GCC unroll 16
  for (int j = 0; j < kLowChains; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  const __m512bh half = (__m512bh)_mm512_set1_epi16(0x3f00);   // 0.5
  const __m512bh tiny = (__m512bh)_mm512_set1_epi16(0x3080);   // 2^-30
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kLowChains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], half, tiny);
  }
  __m512 total = acc[0];
#pragma GCC unroll 16
  for (int j = 1; j < kLowChains; ++j) total = _mm512_add_ps(total, acc[j]);
  return _mm512_reduce_add_ps(total);
}
#endif
#if defined(__AVX512FP16__)
float f16_fma_chains(int64_t iters) {
  __m512h acc[kLowChains];
#pragma GCC unroll 16
  for (int j = 0; j < kLowChains; ++j) acc[j] = _mm512_set1_ph(static_cast<_Float16>(0.5f));
  const __m512h mul = _mm512_set1_ph(static_cast<_Float16>(0.999f));
  const __m512h add = _mm512_set1_ph(static_cast<_Float16>(0.001f));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kLowChains; ++j) acc[j] = _mm512_fmadd_ph(acc[j], mul, add);
  }
  float total = 0;
  for (int j = 0; j < kLowChains; ++j) total += static_cast<float>(_mm512_reduce_add_ph(acc[j]));
  return total;
}
#endif

}  // namespace

extern "C" {

int ollie_bf16_dot_flops_per_iter() {
#if defined(__AVX512BF16__)
  return 16 * 4 * kLowChains;
#else
  return 0;
#endif
}

double ollie_bf16_dot_run(int64_t iters, int threads) {
  double sum = 0;
#if defined(__AVX512BF16__)
#pragma omp parallel num_threads(threads) reduction(+ : sum)
  sum += bf16_dot_chains(iters);
#else
  (void)iters;
  (void)threads;
#endif
  return sum;
}

int ollie_f16_fma_flops_per_iter() {
#if defined(__AVX512FP16__)
  return 32 * 2 * kLowChains;
#else
  return 0;
#endif
}

double ollie_f16_fma_run(int64_t iters, int threads) {
  double sum = 0;
#if defined(__AVX512FP16__)
#pragma omp parallel num_threads(threads) reduction(+ : sum)
  sum += f16_fma_chains(iters);
#else
  (void)iters;
  (void)threads;
#endif
  return sum;
}

// Vector width and chain count of this build: FLOPs of ollie_fma_run = 2 * lanes * chains
// * iters * threads.
int ollie_peak_lanes() { return kLanes; }
int ollie_peak_chains() { return kChains; }

// `threads` OpenMP threads each run `iters` rounds of the FMA chains; returns a checksum.
double ollie_fma_run(int64_t iters, int threads) {
  double sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
  sum += fma_chains(iters);
  return sum;
}

// How many threads an OpenMP parallel region with num_threads(threads) really got.
int ollie_peak_threads(int threads) {
  int got = 0;
#pragma omp parallel num_threads(threads)
  {
#pragma omp single
    got = omp_get_num_threads();
  }
  return got;
}

// iters x 64 dependent register-register integer adds (one cycle each on every current
// core), for a clock estimate; returns 0 where no inline assembly is written for the
// architecture. Not `add $1`: recent Intel cores (Golden Cove) fold small immediate adds in
// the renamer and run such a chain faster than one per cycle.
int64_t ollie_add_chain(int64_t iters) {
  uint64_t x = 0;
  const uint64_t one = 1;
#if defined(__x86_64__)
  for (int64_t i = 0; i < iters; ++i) asm volatile(".rept 64\n\taddq %1, %0\n\t.endr" : "+r"(x) : "r"(one));
  return static_cast<int64_t>(x);
#elif defined(__aarch64__)
  for (int64_t i = 0; i < iters; ++i) asm volatile(".rept 64\n\tadd %0, %0, %1\n\t.endr" : "+r"(x) : "r"(one));
  return static_cast<int64_t>(x);
#else
  (void)iters;
  (void)one;
  return 0;
#endif
}

// First touch, with the same static schedule as the triad, so each thread's pages are
// local to it on a NUMA machine.
void ollie_triad_init(float* a, float* b, float* c, int64_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.0f;
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
}

// STREAM triad a = b + s * c (plain stores, so the write-allocate reads of `a` happen as
// they do in a kernel; the bandwidth convention counts 3 arrays, see measure.h).
void ollie_triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float s,
                 int64_t n, int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

}  // extern "C"
