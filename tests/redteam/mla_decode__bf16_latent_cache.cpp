// WRONG (precision downgrade): reads the latent cache c_kv as bfloat16 (each value rounded
// to 8 significant bits before use, as a kernel over a bf16 KV cache would), in both the
// score and the value sums. Production MLA kernels really do this (FlashMLA keeps the
// cache in bf16), which is why it is tempting; but the spec is float32, and the result
// is off by ~2^-9 relative. The per-element bound of a softmax over 4096 scores of
// 576-term dot products is loose (thousands of times the error of an honest float32
// kernel), so only a tight enough bound, or many elements checked, catches it.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
inline float bf16(float f) {  // round to nearest even, keep the top 16 bits
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace

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
        for (int64_t l = 0; l < L; ++l) acc += q_lat[static_cast<size_t>(l)] * bf16(c_kv[(b * S + s) * L + l]);
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
        for (int64_t l = 0; l < L; ++l) o_lat[static_cast<size_t>(l)] += ps * bf16(c_kv[(b * S + s) * L + l]);
      }
      for (int64_t v = 0; v < DV; ++v) {
        float acc = 0.0f;
        for (int64_t l = 0; l < L; ++l) acc += o_lat[static_cast<size_t>(l)] * w_uv[(h * L + l) * DV + v];
        out0[(b * H + h) * DV + v] = acc;
      }
    }
}
