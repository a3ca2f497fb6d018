// WRONG (wrong scale constant): softmax scale 1/sqrt(DN + DR) = 1/sqrt(192) without the
// YaRN mscale^2 factor ((0.1 ln 40 + 1)^2 ~ 1.874) that the spec folds into SCALE: the
// "standard attention" scale most reference implementations use. The softmax is just a
// bit less peaked; outputs stay plausible. Caught by any value check with input scales
// that keep the softmax unsaturated; with raw normal(0, 1) weights the scores are in the
// hundreds, the softmax is one-hot either way, and the error hides inside a huge bound.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* q_nope, const float* q_pe, const float* c_kv, const float* k_pe,
                             const float* w_uk, const float* w_uv, float* out0, const int64_t* dims) {
  const int64_t B = dims[0], H = dims[1], DN = dims[2], DR = dims[3], S = dims[4], L = dims[5], DV = dims[6];
  const float scale = 0.07216878364870323f;  // BUG: 192^-0.5, mscale^2 missing
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
