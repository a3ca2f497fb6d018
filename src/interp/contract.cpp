// Contract (einsum) in the reference interpreter: both operands are packed into
// [batch, M, K] and [batch, K, N] by a strided gather (which also handles repeated
// labels and labels summed on one side only), multiplied with register-tiled panels,
// and the [batch, M, N] result is permuted to the output label order.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <type_traits>

#include "interp/kernels.h"

namespace ollie::interp::detail {

namespace {

struct Packing {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  std::vector<int> batch_labels, m_labels, n_labels, k_labels;
  std::map<int, int64_t> size;
};

// Stride of each label in a dense operand; a label repeated within one operand
// (a diagonal) has the sum of its axes' strides, an absent one stride 0.
int64_t label_stride(const std::vector<int>& labels, const std::vector<int64_t>& strides,
                     int label) {
  int64_t s = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) s += strides[i];
  return s;
}

// An operand in the dense layout of `order` (label groups in sequence): the tensor's
// own data when it is already laid out so, else a gathered copy.
struct Packed {
  std::vector<double> copy;
  const double* data = nullptr;
  size_t size = 0;
  const double* begin() const { return data; }
  const double* end() const { return data + size; }
};

// Gathers `x` (with `labels`) into the dense layout of `order`; no copy when `x` is in
// that layout already (no diagonal, no transpose).
Packed pack(const std::vector<double>& x, const std::vector<int64_t>& x_shape,
            const std::vector<int>& labels, const std::vector<int>& order, const Packing& p) {
  const auto dense = dense_strides(x_shape);
  std::vector<int64_t> shape, strides;
  for (int l : order) {
    shape.push_back(p.size.at(l));
    strides.push_back(label_stride(labels, dense, l));
  }
  Packed out;
  out.size = static_cast<size_t>(ir::element_count(shape));
  if (strides == dense_strides(shape) && out.size == x.size()) {
    out.data = x.data();
    return out;
  }
  out.copy.resize(out.size);
  gather(x.data(), shape, strides, 0, out.copy.data());
  out.data = out.copy.data();
  return out;
}

bool has_inf(const double* v, size_t n) {
  int64_t infinities = 0;  // counted without branches, so that the loop vectorizes
  for (size_t i = 0; i < n; ++i)
    infinities += static_cast<int64_t>(std::fabs(v[i]) == std::numeric_limits<double>::infinity());
  return infinities > 0;
}

// The multiply-accumulate of every contraction, c += a * b, one term at a time in k
// order per output element. Where the host has fused multiply-add (the interpreter is
// built with -march=native) each step is one fused operation, as the compiler's
// contraction made it before this kernel was written by hand; the `Safe` form for bounds
// (0 * inf contributes 0, and a zero factor from A none at all) multiplies and adds
// separately. Vectors of kLanes doubles, register tiles of kRows x kCols outputs.
#if defined(__AVX512F__) && defined(__FMA__)
using Vec = __m512d;
constexpr int64_t kLanes = 8;
inline Vec vload(const double* p) { return _mm512_loadu_pd(p); }
inline void vstore(double* p, Vec v) { _mm512_storeu_pd(p, v); }
inline Vec vbroadcast(double x) { return _mm512_set1_pd(x); }
inline Vec vfmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_pd(a, b, c); }
// c + (b != 0 ? a * b : 0), NaN counting as nonzero, multiplied and added separately.
inline Vec vadd_nonzero_product(Vec a, Vec b, Vec c) {
  const __mmask8 nonzero = _mm512_cmp_pd_mask(b, _mm512_setzero_pd(), _CMP_NEQ_UQ);
  return _mm512_add_pd(_mm512_maskz_mul_pd(nonzero, a, b), c);
}
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256d;
constexpr int64_t kLanes = 4;
inline Vec vload(const double* p) { return _mm256_loadu_pd(p); }
inline void vstore(double* p, Vec v) { _mm256_storeu_pd(p, v); }
inline Vec vbroadcast(double x) { return _mm256_set1_pd(x); }
inline Vec vfmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_pd(a, b, c); }
inline Vec vadd_nonzero_product(Vec a, Vec b, Vec c) {
  const Vec nonzero = _mm256_cmp_pd(b, _mm256_setzero_pd(), _CMP_NEQ_UQ);
  return _mm256_add_pd(_mm256_and_pd(nonzero, _mm256_mul_pd(a, b)), c);
}
#else
struct Vec {
  double x;
};
constexpr int64_t kLanes = 1;
inline Vec vload(const double* p) { return {*p}; }
inline void vstore(double* p, Vec v) { *p = v.x; }
inline Vec vbroadcast(double x) { return {x}; }
#if defined(__FMA__)
inline Vec vfmadd(Vec a, Vec b, Vec c) { return {std::fma(a.x, b.x, c.x)}; }
#else
inline Vec vfmadd(Vec a, Vec b, Vec c) {
  const volatile double product = a.x * b.x;  // no contraction: the host has no fused multiply-add
  return {c.x + product};
}
#endif
inline Vec vadd_nonzero_product(Vec a, Vec b, Vec c) {
  const volatile double product = b.x == 0.0 ? 0.0 : a.x * b.x;
  return {c.x + product};
}
#endif

constexpr int64_t kVecs = 3;               // vectors per row of a tile
constexpr int64_t kCols = kVecs * kLanes;  // columns of a tile
constexpr int64_t kRows = 4;               // rows of a full tile
constexpr int64_t kDepth = 128;  // terms per pass: a B panel of kDepth x kCols stays in L1

// C[0..R) x [0..kCols) (row stride ldc) += A panel (k x R, k-major) * B panel (k x kCols),
// the tile held in registers over the whole of k.
template <bool Safe, int64_t R>
inline void tile_acc(const double* __restrict ap, const double* __restrict bp, int64_t k, double* c,
                     int64_t ldc) {
  Vec acc[R][kVecs];
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < kVecs; ++v) acc[r][v] = vload(c + r * ldc + v * kLanes);
  for (int64_t kk = 0; kk < k; ++kk) {
    Vec bv[kVecs];
    for (int64_t v = 0; v < kVecs; ++v) bv[v] = vload(bp + kk * kCols + v * kLanes);
    for (int64_t r = 0; r < R; ++r) {
      const double a = ap[kk * R + r];
      if constexpr (Safe) {
        if (a == 0.0) continue;  // an exact zero factor contributes nothing, even against inf
        const Vec av = vbroadcast(a);
        for (int64_t v = 0; v < kVecs; ++v) acc[r][v] = vadd_nonzero_product(av, bv[v], acc[r][v]);
      } else {
        const Vec av = vbroadcast(a);
        for (int64_t v = 0; v < kVecs; ++v) acc[r][v] = vfmadd(av, bv[v], acc[r][v]);
      }
    }
  }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < kVecs; ++v) vstore(c + r * ldc + v * kLanes, acc[r][v]);
}

// C[b] += A[b] (m x k) * B[b] (k x n). A is repacked into panels of kRows rows (k-major),
// B into panels of kCols columns (zero-padded past n); each tile of C stays in registers
// while a panel of A and one of B pass over it. The terms of every element are added in
// k order, exactly as the plain loops would.
template <bool Safe, bool AbsA = false, bool AbsB = false>
void matmul_acc(const double* a, const double* b, double* c, const Packing& p) {
  // |A| and |B| (for bounds) are taken as the panels are packed.
  auto fa = [](double x) { return AbsA ? std::fabs(x) : x; };
  auto fb = [](double x) { return AbsB ? std::fabs(x) : x; };
  if (p.m == 0 || p.n == 0 || p.k == 0) return;
  const int64_t full_tiles = p.m / kRows;
  std::vector<double> apack(static_cast<size_t>(p.m * p.k));
  std::vector<double> bpack(static_cast<size_t>(std::min(p.k, kDepth) * kCols));
  double edge[kRows * kCols];  // a tile of C that is cut by n
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    const double* ab = a + bt * p.m * p.k;
    const double* bb = b + bt * p.k * p.n;
    double* cb = c + bt * p.m * p.n;
    // A: full tiles k-major by kRows, then the remaining rows (each k-major on its own).
    for (int64_t t = 0; t < full_tiles; ++t)
      for (int64_t kk = 0; kk < p.k; ++kk)
        for (int64_t r = 0; r < kRows; ++r)
          apack[static_cast<size_t>((t * p.k + kk) * kRows + r)] =
              fa(ab[(t * kRows + r) * p.k + kk]);
    std::transform(ab + full_tiles * kRows * p.k, ab + p.m * p.k,
                   apack.begin() + full_tiles * kRows * p.k, fa);
    for (int64_t j0 = 0; j0 < p.n; j0 += kCols) {
      const int64_t w = std::min(kCols, p.n - j0);
      for (int64_t k0 = 0; k0 < p.k; k0 += kDepth) {
        const int64_t kc = std::min(kDepth, p.k - k0);
        for (int64_t kk = 0; kk < kc; ++kk) {
          double* row = bpack.data() + kk * kCols;
          const double* src = bb + (k0 + kk) * p.n + j0;
          std::transform(src, src + w, row, fb);
          std::fill(row + w, row + kCols, 0.0);
        }
        auto run = [&](auto rows, int64_t i0, const double* panel) {
          constexpr int64_t R = decltype(rows)::value;
          double* ct = cb + i0 * p.n + j0;
          if (w == kCols) {
            tile_acc<Safe, R>(panel, bpack.data(), kc, ct, p.n);
            return;
          }
          for (int64_t r = 0; r < R; ++r) {
            std::copy(ct + r * p.n, ct + r * p.n + w, edge + r * kCols);
            std::fill(edge + r * kCols + w, edge + (r + 1) * kCols, 0.0);
          }
          tile_acc<Safe, R>(panel, bpack.data(), kc, edge, kCols);
          for (int64_t r = 0; r < R; ++r)
            std::copy(edge + r * kCols, edge + r * kCols + w, ct + r * p.n);
        };
        for (int64_t t = 0; t < full_tiles; ++t)
          run(std::integral_constant<int64_t, kRows>{}, t * kRows,
              apack.data() + (t * p.k + k0) * kRows);
        for (int64_t i = full_tiles * kRows; i < p.m; ++i)
          run(std::integral_constant<int64_t, 1>{}, i, apack.data() + i * p.k + k0);
      }
    }
  }
}

// bound += A * B for bounds, with |A| and |B| where asked: the 0*inf-safe form when
// either factor holds an infinity (`inf`, known beforehand: |x| has one where x has).
template <bool AbsA, bool AbsB>
void bound_matmul_acc(const double* a, const double* b, bool inf, std::vector<double>& c,
                      const Packing& p) {
  if (inf)
    matmul_acc<true, AbsA, AbsB>(a, b, c.data(), p);
  else
    matmul_acc<false, AbsA, AbsB>(a, b, c.data(), p);
}

}  // namespace

bool contraction_fuses() {
#if defined(__FMA__)
  return true;
#else
  return false;
#endif
}

Value eval_contract(const ir::Node& node, const Value& a, const Value& b) {
  Packing p;
  for (size_t i = 0; i < node.lhs_labels.size(); ++i) p.size[node.lhs_labels[i]] = a.t.shape[i];
  for (size_t i = 0; i < node.rhs_labels.size(); ++i) p.size[node.rhs_labels[i]] = b.t.shape[i];
  auto in = [](const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
  };
  for (int l : node.out_labels) {
    const bool l_in = in(node.lhs_labels, l), r_in = in(node.rhs_labels, l);
    if (l_in && r_in)
      p.batch_labels.push_back(l);
    else if (l_in)
      p.m_labels.push_back(l);
    else
      p.n_labels.push_back(l);
  }
  // Summed labels: every label not in the output, each once, in order of appearance.
  for (const auto* labels : {&node.lhs_labels, &node.rhs_labels})
    for (int l : *labels)
      if (!in(node.out_labels, l) && !in(p.k_labels, l)) p.k_labels.push_back(l);
  auto product = [&](const std::vector<int>& ls) {
    int64_t s = 1;
    for (int l : ls) s *= p.size.at(l);
    return s;
  };
  p.batch = product(p.batch_labels);
  p.m = product(p.m_labels);
  p.n = product(p.n_labels);
  p.k = product(p.k_labels);

  std::vector<int> a_order = p.batch_labels, b_order = p.batch_labels;
  a_order.insert(a_order.end(), p.m_labels.begin(), p.m_labels.end());
  a_order.insert(a_order.end(), p.k_labels.begin(), p.k_labels.end());
  b_order.insert(b_order.end(), p.k_labels.begin(), p.k_labels.end());
  b_order.insert(b_order.end(), p.n_labels.begin(), p.n_labels.end());

  const size_t out_count = static_cast<size_t>(p.batch * p.m * p.n);
  const Packed pa = pack(a.t.data, a.t.shape, node.lhs_labels, a_order, p);
  const Packed pb = pack(b.t.data, b.t.shape, node.rhs_labels, b_order, p);
  std::vector<double> value(out_count, 0.0);
  matmul_acc<false>(pa.data, pb.data, value.data(), p);

  // Bound: e_a·|b| + (|a| + e_a)·e_b + u·g(2n-1)·|a|·|b|, skipping the zero parts.
  const double u = rounding_unit(node.dtype);
  const bool rounds = u > 0 && p.k > 0;
  std::vector<double> bound;
  if (rounds || !a.exact() || !b.exact()) {
    bound.assign(out_count, 0.0);
    const bool inf_a = has_inf(pa.data, pa.size), inf_b = has_inf(pb.data, pb.size);
    if (rounds) {
      bound_matmul_acc<true, true>(pa.data, pb.data, inf_a || inf_b, bound, p);
      const double scale = u * growth(2.0 * static_cast<double>(p.k) - 1.0);
      const double eta =
          2.0 * static_cast<double>(p.k) * underflow_unit(node.dtype);  // products and sums
      for (double& x : bound) x = x > 0 ? mul0(x, scale) + eta : 0.0;   // all-zero terms: exactly 0
    }
    Packed ea;
    if (!a.exact()) {
      ea = pack(a.e, a.t.shape, node.lhs_labels, a_order, p);
      bound_matmul_acc<false, true>(ea.data, pb.data, has_inf(ea.data, ea.size) || inf_b, bound, p);
    }
    if (!b.exact()) {
      const Packed eb = pack(b.e, b.t.shape, node.rhs_labels, b_order, p);
      const bool inf_eb = has_inf(eb.data, eb.size);
      if (!ea.data) {
        bound_matmul_acc<true, false>(pa.data, eb.data, inf_a || inf_eb, bound, p);
      } else {
        // |a| + e_a, in a copy of its own when e_a is a's bound itself.
        if (ea.copy.empty()) ea.copy.assign(ea.begin(), ea.end());
        for (size_t i = 0; i < ea.size; ++i) ea.copy[i] += std::fabs(pa.data[i]);
        ea.data = ea.copy.data();
        bound_matmul_acc<false, false>(ea.data, eb.data, has_inf(ea.data, ea.size) || inf_eb, bound,
                                       p);
      }
    }
  }

  // A saturated factor (possibly inf) times anything, even an exact zero (inf * 0 is
  // NaN), leaves nothing known about the terms it enters: those outputs are unbounded.
  if (!a.lo.empty() || !b.lo.empty()) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<uint8_t> row(static_cast<size_t>(p.batch * p.m), 0),
        col(static_cast<size_t>(p.batch * p.n), 0);
    if (!a.lo.empty()) {
      const auto la = pack(a.lo, a.t.shape, node.lhs_labels, a_order, p);  // [batch, M, K]
      for (size_t i = 0; i < row.size(); ++i)
        for (int64_t kk = 0; kk < p.k; ++kk)
          if (la.data[i * static_cast<size_t>(p.k) + static_cast<size_t>(kk)] > 0) row[i] = 1;
    }
    if (!b.lo.empty()) {
      const auto lb = pack(b.lo, b.t.shape, node.rhs_labels, b_order, p);  // [batch, K, N]
      for (int64_t bt = 0; bt < p.batch; ++bt)
        for (int64_t kk = 0; kk < p.k; ++kk)
          for (int64_t j = 0; j < p.n; ++j)
            if (lb.data[static_cast<size_t>((bt * p.k + kk) * p.n + j)] > 0)
              col[static_cast<size_t>(bt * p.n + j)] = 1;
    }
    for (int64_t bt = 0; bt < p.batch; ++bt)
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j)
          if (row[static_cast<size_t>(bt * p.m + i)] || col[static_cast<size_t>(bt * p.n + j)])
            bound[static_cast<size_t>((bt * p.m + i) * p.n + j)] = inf;
  }

  // [batch, M, N] -> output label order.
  std::vector<int> c_order = p.batch_labels;
  c_order.insert(c_order.end(), p.m_labels.begin(), p.m_labels.end());
  c_order.insert(c_order.end(), p.n_labels.begin(), p.n_labels.end());
  std::vector<int64_t> c_shape;
  for (int l : c_order) c_shape.push_back(p.size.at(l));
  const auto c_strides = dense_strides(c_shape);
  std::vector<int64_t> out_shape, out_strides;
  bool identity = true;
  for (size_t i = 0; i < node.out_labels.size(); ++i) {
    const int l = node.out_labels[i];
    out_shape.push_back(p.size.at(l));
    out_strides.push_back(label_stride(c_order, c_strides, l));
    identity = identity && c_order[i] == l;
  }

  Value out;
  out.t.dtype = node.dtype;
  out.t.shape = out_shape;
  auto permute = [&](std::vector<double>& v) {
    if (identity) return std::move(v);
    std::vector<double> r(v.size());
    gather(v.data(), out_shape, out_strides, 0, r.data());
    return r;
  };
  out.t.data = permute(value);
  if (!bound.empty()) out.e = permute(bound);
  finalize(out);
  return out;
}

}  // namespace ollie::interp::detail
