// WRONG (dims order): reads dims in the order of the spec's DIMS dict (B, H, S, L, DR, DN,
// DV) instead of the ABI's first-appearance order in the signature (B, H, DN, DR, S, L,
// DV, see mla_decode.ollie.h). A kernel tested only where the two orders give the same
// numbers passes, but at the default dims it takes S = 128, L = 64, DR = 4096, DN = 512:
// wrong strides everywhere, and reads far past the end of q_pe and k_pe (guard page).
// expect: wrong-or-crash
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q_nope, const float* q_pe, const float* c_kv, const float* k_pe,
                             const float* w_uk, const float* w_uv, float* out0, const int64_t* dims) {
  // BUG: DIMS-dict order, not the ABI order
  const int64_t B = dims[0], H = dims[1], S = dims[2], L = dims[3], DR = dims[4], DN = dims[5], DV = dims[6];
  const float scale = 0.13523377886088009f;
  std::vector<float> q_lat(static_cast<size_t>(L)), p(static_cast<size_t>(S)), o_lat(static_cast<size_t>(L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t l = 0; l < L; ++l) q_lat[static_cast<size_t>(l)] = 0.0f;
      for (int64_t d = 0; d < DN; ++d) {
        const float qv = q_nope[(b * H + h) * DN + d];
        for (int64_t l = 0; l < L; ++l) q_lat[static_cast<size_t>(l)] += qv * w_uk[(h * DN + d) * L + l];
      }
      float mx = -INFINITY;
      for (int64_t s = 0; s < S; ++s) {
        float acc = 0.0f;
        for (int64_t l = 0; l < L; ++l) acc += q_lat[static_cast<size_t>(l)] * c_kv[(b * S + s) * L + l];
        float rope = 0.0f;
        for (int64_t r = 0; r < DR; ++r) rope += q_pe[(b * H + h) * DR + r] * k_pe[(b * S + s) * DR + r];
        acc += rope;
        p[static_cast<size_t>(s)] = acc * scale;
        mx = std::fmax(mx, p[static_cast<size_t>(s)]);
      }
      float sum = 0.0f;
      for (int64_t s = 0; s < S; ++s) sum += (p[static_cast<size_t>(s)] = std::exp(p[static_cast<size_t>(s)] - mx));
      for (int64_t l = 0; l < L; ++l) o_lat[static_cast<size_t>(l)] = 0.0f;
      for (int64_t s = 0; s < S; ++s) {
        const float ps = p[static_cast<size_t>(s)] / sum;
        for (int64_t l = 0; l < L; ++l) o_lat[static_cast<size_t>(l)] += ps * c_kv[(b * S + s) * L + l];
      }
      for (int64_t v = 0; v < DV; ++v) {
        float acc = 0.0f;
        for (int64_t l = 0; l < L; ++l) acc += o_lat[static_cast<size_t>(l)] * w_uv[(h * L + l) * DV + v];
        out0[(b * H + h) * DV + v] = acc;
      }
    }
}
