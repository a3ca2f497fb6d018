// WRONG (mask missing): every query attends to ALL S keys (no causal mask), i.e.
// bidirectional attention. The last row is exactly right (it may see every key anyway),
// which is the row a "check the last token" spot test compares. With raw normal(0, 1)
// inputs this spec's derived bounds overflow to inf, so only input scales like the
// spec's own (weights / sqrt(fan-in)) make the comparison meaningful.
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
      const int64_t last = S - 1;  // BUG: should be i (causal)
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
        merged[static_cast<size_t>(i * H * HD + h * HD + d)] = acc;
      }
    }
  for (int64_t s = 0; s < S; ++s)
    for (int64_t m = 0; m < DM; ++m) {
      float acc = 0.0f;
      for (int64_t c = 0; c < H * HD; ++c) acc += merged[static_cast<size_t>(s * H * HD + c)] * w_o[c * DM + m];
      out0[s * DM + m] = acc;
    }
}
