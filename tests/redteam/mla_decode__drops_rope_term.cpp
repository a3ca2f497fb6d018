// WRONG (one term dropped): the score omits the decoupled-RoPE term q_pe . k_pe and keeps
// only the latent term q_lat . c_kv (as in an MLA kernel written for a model variant
// without rope dims). Everything else is exact. The rope part is 64 of 576 score dims, so
// outputs change moderately; any value check on random inputs with scales that keep the
// softmax unsaturated catches it.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q_nope, const float* q_pe, const float* c_kv, const float* k_pe,
                             const float* w_uk, const float* w_uv, float* out0, const int64_t* dims) {
  const int64_t B = dims[0], H = dims[1], DN = dims[2], DR = dims[3], S = dims[4], L = dims[5], DV = dims[6];
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
        (void)DR;  // BUG: + q_pe . k_pe is missing
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
