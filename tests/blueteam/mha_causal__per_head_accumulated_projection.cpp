// Correct mha_causal (examples/mha_causal.py) organized per head: Q, K, V are projected
// head by head into [S, HD] scratch (x @ w_q[:, h, :], with fma), attention runs per head
// with the causal mask applied by looping keys 0..i only (masked keys skipped; their
// probabilities are exactly 0 in the spec too), and instead of merging heads into
// [S, H*HD] and doing one output GEMM, every head's [S, HD] result is multiplied by its
// own w_o[h] slice and ACCUMULATED into the output (the sum over h*HD is reordered as a
// sum over heads of per-head sums). Heads run in parallel (OpenMP), each into a private
// [S, DM] partial, summed in head order at the end.
// Spec corner cases kept, as in attention_causal__flash_online: masked probabilities are
// exactly 0 in the spec and 0 * inf = NaN, so a non-finite v[j][d] with j > i makes
// head[i][d] NaN (a per-column suffix scan); a row whose visible scores are not all
// finite is recomputed literally (all S keys with the -1e30 mask, max, exp, sum, p @ v).
// expect: pass
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

extern "C" void ollie_kernel(const float* x, const float* w_q, const float* w_k, const float* w_v,
                             const float* w_o, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], DM = dims[1], H = dims[2], HD = dims[3];
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(HD)));
  std::vector<float> partial(static_cast<size_t>(H * S * DM), 0.0f);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t h = 0; h < H; ++h) {
    std::vector<float> q(static_cast<size_t>(S * HD), 0.0f), k(q.size(), 0.0f), v(q.size(), 0.0f);
    for (int64_t s = 0; s < S; ++s)
      for (int64_t dm = 0; dm < DM; ++dm) {
        const float xv = x[s * DM + dm];
        const int64_t w = (dm * H + h) * HD;
        for (int64_t d = 0; d < HD; ++d) {
          q[static_cast<size_t>(s * HD + d)] = std::fma(xv, w_q[w + d], q[static_cast<size_t>(s * HD + d)]);
          k[static_cast<size_t>(s * HD + d)] = std::fma(xv, w_k[w + d], k[static_cast<size_t>(s * HD + d)]);
          v[static_cast<size_t>(s * HD + d)] = std::fma(xv, w_v[w + d], v[static_cast<size_t>(s * HD + d)]);
        }
      }
    std::vector<unsigned char> bad_after(static_cast<size_t>(S * HD), 0), seen(static_cast<size_t>(HD), 0);
    for (int64_t i = S - 1; i >= 0; --i)
      for (int64_t d = 0; d < HD; ++d) {
        bad_after[static_cast<size_t>(i * HD + d)] = seen[static_cast<size_t>(d)];
        if (!std::isfinite(v[static_cast<size_t>(i * HD + d)])) seen[static_cast<size_t>(d)] = 1;
      }
    std::vector<float> p(static_cast<size_t>(S)), head(static_cast<size_t>(HD));
    float* part = partial.data() + h * S * DM;
    for (int64_t i = 0; i < S; ++i) {
      float mx = -std::numeric_limits<float>::infinity();
      bool finite = true;
      for (int64_t j = 0; j <= i; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < HD; ++d) dot += q[static_cast<size_t>(i * HD + d)] * k[static_cast<size_t>(j * HD + d)];
        const float sc = dot * scale;
        finite = finite && std::isfinite(sc);
        p[static_cast<size_t>(j)] = sc;
        mx = sc > mx ? sc : mx;
      }
      std::fill(head.begin(), head.end(), 0.0f);
      if (finite) {
        float sum = 0.0f;
        for (int64_t j = 0; j <= i; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
        for (int64_t j = 0; j <= i; ++j) {
          const float pj = p[static_cast<size_t>(j)] / sum;
          for (int64_t d = 0; d < HD; ++d) head[static_cast<size_t>(d)] += pj * v[static_cast<size_t>(j * HD + d)];
        }
        for (int64_t d = 0; d < HD; ++d)
          if (bad_after[static_cast<size_t>(i * HD + d)]) head[static_cast<size_t>(d)] = std::numeric_limits<float>::quiet_NaN();
      } else {  // literal path: the spec's steps over all S keys
        for (int64_t j = i + 1; j < S; ++j) p[static_cast<size_t>(j)] = -1e30f;
        mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < S; ++j) {
          const float sc = p[static_cast<size_t>(j)];
          mx = (sc > mx || sc != sc) ? sc : mx;
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < S; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
        for (int64_t j = 0; j < S; ++j) {
          const float pj = p[static_cast<size_t>(j)] / sum;
          for (int64_t d = 0; d < HD; ++d) head[static_cast<size_t>(d)] += pj * v[static_cast<size_t>(j * HD + d)];
        }
      }
      for (int64_t d = 0; d < HD; ++d) {
        const float hv = head[static_cast<size_t>(d)];
        const float* wo = w_o + (h * HD + d) * DM;
        float* o = part + i * DM;
        for (int64_t dm = 0; dm < DM; ++dm) o[dm] = std::fma(hv, wo[dm], o[dm]);
      }
    }
  }
  for (int64_t e = 0; e < S * DM; ++e) {
    float acc = 0.0f;
    for (int64_t h = 0; h < H; ++h) acc += partial[static_cast<size_t>(h * S * DM + e)];
    out0[e] = acc;
  }
}
