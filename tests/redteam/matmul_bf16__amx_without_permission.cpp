// WRONG (missing permission): multiplies 16 x 32 bfloat16 tiles with AMX's tdpbf16ps into
// float32 tiles, but never asks Linux for the tile state with
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): on an AMX machine the first tile
// instruction raises SIGILL (on one without AMX, it is an unknown instruction: SIGILL as
// well). A test harness that once asked for the permission in its own process, or ran the
// kernel on a machine where something else had, would see correct outputs. The runner
// reports the signal with what to do.
// expect: crash
#pragma GCC target("amx-tile,amx-bf16")
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

float from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace

extern "C" void ollie_kernel(const uint16_t* a, const uint16_t* b, float* out0,
                             const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  // BUG: no arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) before the tiles.
  TileConfig cfg;
  cfg.rows[0] = 16, cfg.colsb[0] = 64;  // C: 16 x 16 float32
  cfg.rows[1] = 16, cfg.colsb[1] = 64;  // A: 16 x 32 bfloat16
  cfg.rows[2] = 16, cfg.colsb[2] = 64;  // B: 16 pairs of rows x 16 columns, VNNI order
  _tile_loadconfig(&cfg);
  const int64_t Mt = M / 16 * 16, Nt = N / 16 * 16, Kt = K / 32 * 32;
  std::vector<uint16_t> packed(16 * 32);
  for (int64_t i = 0; i < Mt; i += 16)
    for (int64_t j = 0; j < Nt; j += 16) {
      _tile_zero(0);
      for (int64_t k = 0; k < Kt; k += 32) {
        for (int64_t kk = 0; kk < 32; ++kk)  // B[k + kk][j + jj] to row kk / 2, pair kk % 2
          for (int64_t jj = 0; jj < 16; ++jj)
            packed[(kk / 2) * 32 + jj * 2 + kk % 2] = b[(k + kk) * N + j + jj];
        _tile_loadd(1, a + i * K + k, K * 2);
        _tile_loadd(2, packed.data(), 64);
        _tile_dpbf16ps(0, 1, 2);
      }
      _tile_stored(0, out0 + i * N + j, N * 4);
    }
  _tile_release();
  // Whatever the tiles did not cover (edges, the K tail), in scalar float32.
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const bool tiled = i < Mt && j < Nt;
      float s = tiled ? out0[i * N + j] : 0.0f;
      for (int64_t k = tiled ? Kt : 0; k < K; ++k)
        s += from_bf16(a[i * K + k]) * from_bf16(b[k * N + j]);
      out0[i * N + j] = s;
    }
}
