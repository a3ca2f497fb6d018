// WRONG (signed integer overflow, undefined behaviour): the kernel picks its row-block
// size from a small table, indexed by an FNV-1a style hash of the dims that is computed
// in int32_t: `h = (h ^ d) * 16777619` overflows on every call. With the wrap-around
// the hardware does, the index is some value in 0..3 and every block size gives the
// same, right, result, so all outputs agree with the reference at every dims; but a
// signed overflow is undefined, and a compiler may assume it never happens (fold the
// hash, drop the mask). Only the UndefinedBehaviorSanitizer build of the full level
// sees it (runtime error: signed integer overflow). The fix is uint32_t arithmetic.
// level: full
// expect: sanitizer
#include <algorithm>
#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  int32_t h = -2128831035;  // the FNV offset basis 2166136261 as an int32_t
  for (int i = 0; i < 3; ++i) h = (h ^ static_cast<int32_t>(dims[i])) * 16777619;  // BUG: overflows
  static const int64_t kRowBlocks[4] = {4, 8, 16, 32};
  const int64_t rows = kRowBlocks[static_cast<uint32_t>(h) & 3];
  for (int64_t i0 = 0; i0 < M; i0 += rows) {
    const int64_t i1 = std::min(M, i0 + rows);
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < N; ++j) out0[i * N + j] = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = i0; i < i1; ++i) {
        const float aik = a[i * K + k];
        for (int64_t j = 0; j < N; ++j) out0[i * N + j] += aik * b[k * N + j];
      }
  }
}
