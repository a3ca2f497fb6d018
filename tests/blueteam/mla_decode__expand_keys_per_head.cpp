// Correct mla_decode (examples/mla_decode.py) WITHOUT the query-side absorption: instead
// of q_lat = q_nope @ w_uk (then q_lat . c_kv), it expands every cached latent into the
// per-head key k_nope[s] = w_uk[h] @ c_kv[s] (DN values per token and head, the "naive"
// MLA of the DeepSeek-V2 paper) and scores q_nope . k_nope[s] + q_pe . k_pe[s]. Same
// math ((q w_uk) . c == q . (w_uk c)), different association and rounding, and about
// S*H*DN*L multiply-adds (4.3 G at the default dims) instead of H*DN*L: slow but correct.
// The value side stays absorbed (o_lat = sum_s p_s c_s, then o_lat @ w_uv). Dims in ABI
// order: B, H, DN, DR, S, L, DV. Heads run in parallel (OpenMP); dot products over L use
// double accumulators in 4 lanes.
// expect: pass
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

extern "C" void ollie_kernel(const float* q_nope, const float* q_pe, const float* c_kv, const float* k_pe,
                             const float* w_uk, const float* w_uv, float* out0, const int64_t* dims) {
  const int64_t B = dims[0], H = dims[1], DN = dims[2], DR = dims[3], S = dims[4], L = dims[5], DV = dims[6];
  const double kScale = std::pow(128.0 + 64.0, -0.5) * std::pow(0.1 * std::log(40.0) + 1.0, 2.0);
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const float* qn = q_nope + (b * H + h) * DN;
      const float* qr = q_pe + (b * H + h) * DR;
      const float* wk = w_uk + h * DN * L;
      std::vector<float> scores(static_cast<size_t>(S));
      for (int64_t s = 0; s < S; ++s) {
        const float* c = c_kv + (b * S + s) * L;
        double score = 0.0;
        for (int64_t dn = 0; dn < DN; ++dn) {
          const float* w = wk + dn * L;
          double acc = 0.0;
#pragma omp simd reduction(+ : acc)
          for (int64_t l = 0; l < L; ++l) acc += static_cast<double>(w[l]) * c[l];
          score += static_cast<double>(qn[dn]) * static_cast<float>(acc);  // k_nope[s][dn] as a float
        }
        const float* kr = k_pe + (b * S + s) * DR;
        double rope = 0.0;
        for (int64_t r = 0; r < DR; ++r) rope += static_cast<double>(qr[r]) * kr[r];
        scores[static_cast<size_t>(s)] = static_cast<float>((score + rope) * kScale);
      }
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t s = 0; s < S; ++s) {
        const float x = scores[static_cast<size_t>(s)];
        mx = (x > mx || x != x) ? x : mx;
      }
      double sum = 0.0;
      for (int64_t s = 0; s < S; ++s) {
        const float e = std::exp(scores[static_cast<size_t>(s)] - mx);
        scores[static_cast<size_t>(s)] = e;
        sum += e;
      }
      std::vector<double> o_lat(static_cast<size_t>(L), 0.0);
      for (int64_t s = 0; s < S; ++s) {
        const double p = scores[static_cast<size_t>(s)] / sum;
        const float* c = c_kv + (b * S + s) * L;
        for (int64_t l = 0; l < L; ++l) o_lat[static_cast<size_t>(l)] += p * c[l];
      }
      float* o = out0 + (b * H + h) * DV;
      const float* wv = w_uv + h * L * DV;
      for (int64_t dv = 0; dv < DV; ++dv) {
        double acc = 0.0;
        for (int64_t l = 0; l < L; ++l) acc += o_lat[static_cast<size_t>(l)] * wv[l * DV + dv];
        o[dv] = static_cast<float>(acc);
      }
    }
  }
}
