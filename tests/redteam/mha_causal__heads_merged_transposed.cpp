// WRONG (layout): merges heads as [S, HD, H] (merged[i][d * H + h]) instead of the spec's
// transpose(1, 0, 2).reshape(S, H*HD) = [S, H, HD]: the classic reshape/transpose mix-up.
// Every head is computed right, only the order of the H*HD features fed to w_o is
// permuted. With H = 1 both layouts agree. With raw normal(0, 1) inputs the scores are
// in the hundreds and the derived bounds of this spec overflow to inf (any value is
// accepted); input scales like the spec's own (weights / sqrt(fan-in)) expose it.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void ollie_kernel(const float* x, const float* w_q, const float* w_k, const float* w_v,
                             const float* w_o, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], DM = dims[1], H = dims[2], HD = dims[3];
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  std::vector<float> q(static_cast<size_t>(H * S * HD)), k(q.size()), v(q.size()), merged(static_cast<size_t>(S * H * HD));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < HD; ++d) {
        float aq = 0.0f, ak = 0.0f, av = 0.0f;
        for (int64_t m = 0; m < DM; ++m) {
          const float xv = x[s * DM + m];
          aq += xv * w_q[(m * H + h) * HD + d];
          ak += xv * w_k[(m * H + h) * HD + d];
          av += xv * w_v[(m * H + h) * HD + d];
        }
        q[static_cast<size_t>((h * S + s) * HD + d)] = aq;
        k[static_cast<size_t>((h * S + s) * HD + d)] = ak;
        v[static_cast<size_t>((h * S + s) * HD + d)] = av;
      }
  std::vector<float> p(static_cast<size_t>(S));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const int64_t last = i;
      float mx = -INFINITY;
      for (int64_t j = 0; j <= last; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < HD; ++d) dot += q[static_cast<size_t>((h * S + i) * HD + d)] * k[static_cast<size_t>((h * S + j) * HD + d)];
        p[static_cast<size_t>(j)] = dot * scale;
        mx = std::fmax(mx, p[static_cast<size_t>(j)]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j <= last; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
      for (int64_t d = 0; d < HD; ++d) {
        float acc = 0.0f;
        for (int64_t j = 0; j <= last; ++j) acc += p[static_cast<size_t>(j)] / sum * v[static_cast<size_t>((h * S + j) * HD + d)];
        merged[static_cast<size_t>(i * H * HD + d * H + h)] = acc;  // BUG: [S, HD, H]
      }
    }
  for (int64_t s = 0; s < S; ++s)
    for (int64_t m = 0; m < DM; ++m) {
      float acc = 0.0f;
      for (int64_t c = 0; c < H * HD; ++c) acc += merged[static_cast<size_t>(s * H * HD + c)] * w_o[c * DM + m];
      out0[s * DM + m] = acc;
    }
}
