// Correct attention_causal (examples/attention_causal.py), flash-attention style: the
// S x S score matrix is never materialized. For each query row, keys are visited in
// blocks of 32 up to the diagonal only (masked keys are skipped, not set to -1e30), with
// an online softmax: a running max m, running denominator l and an unnormalized output
// accumulator o[D], rescaled by exp(m_old - m_new) when the max grows; o / l at the end.
// Rows are split over OpenMP threads.
// Spec corner cases kept: (1) masked probabilities are exactly 0 in the spec, and 0 * inf
// = NaN, so a non-finite v[j][d] with j > i makes out[i][d] NaN: tracked per column with
// a suffix scan; (2) a row whose visible scores are not all finite is recomputed
// literally (full row with the -1e30 mask, max, exp, sum, p @ v).
// expect: pass
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0, const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  constexpr int64_t KB = 32;
  // last_bad[d] after processing rows > i: the largest j with v[j][d] not finite (or -1).
  // Stored per row i as bad_after[i * D + d] = (exists j > i with v[j][d] not finite).
  std::vector<unsigned char> bad_after(static_cast<size_t>(S * D), 0);
  {
    std::vector<unsigned char> seen(static_cast<size_t>(D), 0);
    for (int64_t i = S - 1; i >= 0; --i) {
      for (int64_t d = 0; d < D; ++d) bad_after[static_cast<size_t>(i * D + d)] = seen[static_cast<size_t>(d)];
      for (int64_t d = 0; d < D; ++d)
        if (!std::isfinite(v[i * D + d])) seen[static_cast<size_t>(d)] = 1;
    }
  }
#pragma omp parallel
  {
    std::vector<float> s(static_cast<size_t>(S)), o(static_cast<size_t>(D));
#pragma omp for schedule(dynamic, 8)
    for (int64_t i = 0; i < S; ++i) {
      const float* qi = q + i * D;
      float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
      std::fill(o.begin(), o.end(), 0.0f);
      bool finite = true;
      for (int64_t j0 = 0; j0 <= i && finite; j0 += KB) {
        const int64_t j1 = std::min(j0 + KB, i + 1);
        float bm = m;
        for (int64_t j = j0; j < j1; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * k[j * D + d];
          s[static_cast<size_t>(j)] = dot * scale;
          if (!std::isfinite(s[static_cast<size_t>(j)])) finite = false;
          bm = std::max(bm, s[static_cast<size_t>(j)]);
        }
        if (!finite) break;
        const float corr = std::exp(m - bm);  // 0 on the first block (m = -inf)
        l *= corr;
        for (int64_t d = 0; d < D; ++d) o[static_cast<size_t>(d)] *= corr;
        for (int64_t j = j0; j < j1; ++j) {
          const float p = std::exp(s[static_cast<size_t>(j)] - bm);
          l += p;
          for (int64_t d = 0; d < D; ++d) o[static_cast<size_t>(d)] += p * v[j * D + d];
        }
        m = bm;
      }
      float* out = out0 + i * D;
      if (finite) {
        for (int64_t d = 0; d < D; ++d)
          out[d] = bad_after[static_cast<size_t>(i * D + d)] ? std::numeric_limits<float>::quiet_NaN()
                                                             : o[static_cast<size_t>(d)] / l;
        continue;
      }
      // Literal path for rows with non-finite scores: exactly the spec's steps.
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < S; ++j) {
        float sc = -1e30f;
        if (j <= i) {
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * k[j * D + d];
          sc = dot * scale;
        }
        s[static_cast<size_t>(j)] = sc;
        mx = (sc > mx || sc != sc) ? sc : mx;
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < S; ++j) sum += (s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx));
      for (int64_t d = 0; d < D; ++d) {
        float acc = 0.0f;
        for (int64_t j = 0; j < S; ++j) acc += (s[static_cast<size_t>(j)] / sum) * v[j * D + d];
        out[d] = acc;
      }
    }
  }
}
