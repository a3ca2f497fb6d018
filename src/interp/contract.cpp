// Contract (einsum) in the reference interpreter: both operands are packed into
// [batch, M, K] and [batch, K, N] by a strided gather (which also handles repeated
// labels and labels summed on one side only), multiplied with a blocked i-k-j loop,
// and the [batch, M, N] result is permuted to the output label order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

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
int64_t label_stride(const std::vector<int>& labels, const std::vector<int64_t>& strides, int label) {
  int64_t s = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) s += strides[i];
  return s;
}

// Gathers `x` (with `labels`) into the dense layout of `order` (label groups in sequence).
std::vector<double> pack(const std::vector<double>& x, const std::vector<int64_t>& x_shape, const std::vector<int>& labels,
                         const std::vector<int>& order, const Packing& p) {
  const auto dense = dense_strides(x_shape);
  std::vector<int64_t> shape, strides;
  for (int l : order) {
    shape.push_back(p.size.at(l));
    strides.push_back(label_stride(labels, dense, l));
  }
  std::vector<double> out(static_cast<size_t>(ir::element_count(shape)));
  gather(x.data(), shape, strides, 0, out.data());
  return out;
}

std::vector<double> absolute(std::vector<double> v) {
  for (double& x : v) x = std::fabs(x);
  return v;
}

bool has_inf(const std::vector<double>& v) {
  for (double x : v) if (std::isinf(x)) return true;
  return false;
}

// c[j] += a * b[j] over [j0, j1); `Safe` makes 0 * inf contribute 0, for bounds.
// __restrict lets -O2 vectorize without a runtime alias check.
template <bool Safe>
inline void axpy(double a, const double* __restrict b, double* __restrict c, int64_t j0, int64_t j1) {
  if constexpr (Safe) {
    if (a == 0.0) return;
    for (int64_t j = j0; j < j1; ++j) c[j] += b[j] == 0.0 ? 0.0 : a * b[j];
  } else {
    for (int64_t j = j0; j < j1; ++j) c[j] += a * b[j];
  }
}

// Four rows of C share each streamed row of B, quartering B's memory traffic.
inline void axpy4(const double* a, const double* __restrict b, double* __restrict c0, double* __restrict c1,
                  double* __restrict c2, double* __restrict c3, int64_t j0, int64_t j1) {
  const double a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
  for (int64_t j = j0; j < j1; ++j) {
    const double bj = b[j];
    c0[j] += a0 * bj;
    c1[j] += a1 * bj;
    c2[j] += a2 * bj;
    c3[j] += a3 * bj;
  }
}

// C[b] += A[b] (m x k) * B[b] (k x n), blocked over columns of C so that a block of
// B stays in cache while every row of A passes over it.
template <bool Safe>
void matmul_acc(const double* a, const double* b, double* c, const Packing& p) {
  constexpr int64_t kBlock = 256;
  std::vector<double> a4(static_cast<size_t>(4 * p.k));  // 4 rows of A, k-major
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    const double* ab = a + bt * p.m * p.k;
    const double* bb = b + bt * p.k * p.n;
    double* cb = c + bt * p.m * p.n;
    int64_t i = 0;
    if constexpr (!Safe) {
      for (; i + 4 <= p.m; i += 4) {
        for (int64_t kk = 0; kk < p.k; ++kk)
          for (int64_t r = 0; r < 4; ++r) a4[static_cast<size_t>(kk * 4 + r)] = ab[(i + r) * p.k + kk];
        double* c0 = cb + i * p.n;
        for (int64_t j0 = 0; j0 < p.n; j0 += kBlock) {
          const int64_t j1 = std::min(p.n, j0 + kBlock);
          for (int64_t kk = 0; kk < p.k; ++kk)
            axpy4(&a4[static_cast<size_t>(kk * 4)], bb + kk * p.n, c0, c0 + p.n, c0 + 2 * p.n, c0 + 3 * p.n, j0, j1);
        }
      }
    }
    for (; i < p.m; ++i) {
      double* crow = cb + i * p.n;
      for (int64_t j0 = 0; j0 < p.n; j0 += kBlock) {
        const int64_t j1 = std::min(p.n, j0 + kBlock);
        for (int64_t kk = 0; kk < p.k; ++kk) axpy<Safe>(ab[i * p.k + kk], bb + kk * p.n, crow, j0, j1);
      }
    }
  }
}

void bound_matmul_acc(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& c,
                      const Packing& p) {
  if (has_inf(a) || has_inf(b)) matmul_acc<true>(a.data(), b.data(), c.data(), p);
  else matmul_acc<false>(a.data(), b.data(), c.data(), p);
}

}  // namespace

Value eval_contract(const ir::Node& node, const Value& a, const Value& b) {
  Packing p;
  for (size_t i = 0; i < node.lhs_labels.size(); ++i) p.size[node.lhs_labels[i]] = a.t.shape[i];
  for (size_t i = 0; i < node.rhs_labels.size(); ++i) p.size[node.rhs_labels[i]] = b.t.shape[i];
  auto in = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  for (int l : node.out_labels) {
    const bool l_in = in(node.lhs_labels, l), r_in = in(node.rhs_labels, l);
    if (l_in && r_in) p.batch_labels.push_back(l);
    else if (l_in) p.m_labels.push_back(l);
    else p.n_labels.push_back(l);
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
  const auto pa = pack(a.t.data, a.t.shape, node.lhs_labels, a_order, p);
  const auto pb = pack(b.t.data, b.t.shape, node.rhs_labels, b_order, p);
  std::vector<double> value(out_count, 0.0);
  matmul_acc<false>(pa.data(), pb.data(), value.data(), p);

  // Bound: e_a·|b| + (|a| + e_a)·e_b + u·g(2n-1)·|a|·|b|, skipping the zero parts.
  const double u = rounding_unit(node.dtype);
  const bool rounds = u > 0 && p.k > 0;
  std::vector<double> bound;
  if (rounds || !a.exact() || !b.exact()) {
    bound.assign(out_count, 0.0);
    const auto abs_a = absolute(pa);
    const auto abs_b = absolute(pb);
    if (rounds) {
      bound_matmul_acc(abs_a, abs_b, bound, p);
      const double scale = u * growth(2.0 * static_cast<double>(p.k) - 1.0);
      const double eta = 2.0 * static_cast<double>(p.k) * underflow_unit(node.dtype);  // products and sums
      for (double& x : bound) x = x > 0 ? mul0(x, scale) + eta : 0.0;  // all-zero terms: exactly 0
    }
    std::vector<double> ea;
    if (!a.exact()) {
      ea = pack(a.e, a.t.shape, node.lhs_labels, a_order, p);
      bound_matmul_acc(ea, abs_b, bound, p);
    }
    if (!b.exact()) {
      const auto eb = pack(b.e, b.t.shape, node.rhs_labels, b_order, p);
      if (ea.empty()) {
        bound_matmul_acc(abs_a, eb, bound, p);
      } else {
        for (size_t i = 0; i < ea.size(); ++i) ea[i] += abs_a[i];
        bound_matmul_acc(ea, eb, bound, p);
      }
    }
  }

  // A saturated factor (possibly inf) times anything, even an exact zero (inf * 0 is
  // NaN), leaves nothing known about the terms it enters: those outputs are unbounded.
  if (!a.lo.empty() || !b.lo.empty()) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<uint8_t> row(static_cast<size_t>(p.batch * p.m), 0), col(static_cast<size_t>(p.batch * p.n), 0);
    if (!a.lo.empty()) {
      const auto la = pack(a.lo, a.t.shape, node.lhs_labels, a_order, p);  // [batch, M, K]
      for (size_t i = 0; i < row.size(); ++i)
        for (int64_t kk = 0; kk < p.k; ++kk)
          if (la[i * static_cast<size_t>(p.k) + static_cast<size_t>(kk)] > 0) row[i] = 1;
    }
    if (!b.lo.empty()) {
      const auto lb = pack(b.lo, b.t.shape, node.rhs_labels, b_order, p);  // [batch, K, N]
      for (int64_t bt = 0; bt < p.batch; ++bt)
        for (int64_t kk = 0; kk < p.k; ++kk)
          for (int64_t j = 0; j < p.n; ++j)
            if (lb[static_cast<size_t>((bt * p.k + kk) * p.n + j)] > 0) col[static_cast<size_t>(bt * p.n + j)] = 1;
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
