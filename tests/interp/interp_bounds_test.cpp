// Error-bound properties of the reference interpreter: real float32 computations (in
// several orders) stay within the derived bound on random data, while a dropped term
// or a 1e-4 scale error does not; exact ops have zero bounds; special values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>

#include "test_graph.h"

namespace ollie::interp {
namespace {

using ir::DType;
using ir::OpKind;
using testing::S;
using testing::T;
using testing::TestGraph;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Largest |got - value| / bound over all elements (inf if a zero bound is missed).
double worst_ratio(const std::vector<float>& got, const Tensor& value, const Tensor& bound) {
  EXPECT_EQ(got.size(), value.data.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - value.data[i]);
    if (err == 0) continue;
    worst = std::max(worst, bound.data[i] > 0 ? err / bound.data[i] : kInf);
  }
  return worst;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<float> random_floats(std::mt19937& rng, size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng));
  return v;
}

std::vector<float> normal_floats(std::mt19937& rng, size_t n, double sigma = 1.0) {
  std::normal_distribution<double> d(0.0, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng));
  return v;
}

// ---------------------------------------------------------------------------
// Long sums

struct SumGraph {
  TestGraph tg;
  SumGraph(int64_t rows, int64_t n) {
    auto x = tg.in("x", DType::F32, S({rows, n}));
    tg.out(tg.b.reduce(ir::ReduceKind::Sum, x, {1}));
  }
};

TEST(InterpBounds, FloatSumsInSeveralOrdersStayWithinBound) {
  const int64_t rows = 64, n = 4096;
  SumGraph sg(rows, n);
  for (unsigned seed = 1; seed <= 4; ++seed) {
    std::mt19937 rng(seed);
    auto x = random_floats(rng, static_cast<size_t>(rows * n), 0.0, 1.0);
    auto r = sg.tg.run({T(DType::F32, {rows, n}, to_double(x))});
    std::vector<float> recursive(rows), reverse(rows), blocked(rows), pairwise(rows);
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = x.data() + i * n;
      float s = 0;
      for (int64_t k = 0; k < n; ++k) s += row[k];
      recursive[static_cast<size_t>(i)] = s;
      s = 0;
      for (int64_t k = n; k-- > 0;) s += row[k];
      reverse[static_cast<size_t>(i)] = s;
      float lanes[8] = {};
      for (int64_t k = 0; k < n; ++k) lanes[k % 8] += row[k];
      s = 0;
      for (float l : lanes) s += l;
      blocked[static_cast<size_t>(i)] = s;
      std::vector<float> level(row, row + n);
      while (level.size() > 1) {
        for (size_t k = 0; k < level.size() / 2; ++k) level[k] = level[2 * k] + level[2 * k + 1];
        level.resize(level.size() / 2);
      }
      pairwise[static_cast<size_t>(i)] = level[0];
    }
    EXPECT_LE(worst_ratio(recursive, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    EXPECT_LE(worst_ratio(reverse, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    EXPECT_LE(worst_ratio(blocked, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    EXPECT_LE(worst_ratio(pairwise, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
  }
}

TEST(InterpBounds, DroppedTermOrScaleErrorInLongSumExceedsBound) {
  const int64_t rows = 16, n = 4096;
  SumGraph sg(rows, n);
  for (unsigned seed = 1; seed <= 3; ++seed) {
    std::mt19937 rng(100 + seed);
    auto x = random_floats(rng, static_cast<size_t>(rows * n), 0.0, 1.0);
    auto r = sg.tg.run({T(DType::F32, {rows, n}, to_double(x))});
    std::vector<float> dropped(rows), scaled(rows);
    for (int64_t i = 0; i < rows; ++i) {
      // Computed in double so the only error is the injected one.
      double s = 0, all = 0;
      for (int64_t k = 0; k < n; ++k) {
        all += x[static_cast<size_t>(i * n + k)];
        if (k != 17) s += x[static_cast<size_t>(i * n + k)];
      }
      dropped[static_cast<size_t>(i)] = static_cast<float>(s);
      scaled[static_cast<size_t>(i)] = static_cast<float>(all * (1 + 1e-4));
    }
    EXPECT_GT(worst_ratio(dropped, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    EXPECT_GT(worst_ratio(scaled, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    // The worst-case n·u bound would have accepted both.
    const double u = std::ldexp(1.0, -24);
    double sum0 = r.values[0].data[0];
    EXPECT_LT(std::fabs(scaled[0] - sum0), n * u * sum0);
  }
}

// ---------------------------------------------------------------------------
// Matmul

TEST(InterpBounds, FloatMatmulInSeveralOrdersStaysWithinBoundAndDroppedTermDoesNot) {
  const int64_t m = 32, k = 1024, n = 24;
  TestGraph tg;
  auto a = tg.in("a", DType::F32, S({m, k}));
  auto b = tg.in("b", DType::F32, S({k, n}));
  tg.out(tg.b.contract(a, b, {0, 1}, {1, 2}, {0, 2}));
  for (unsigned seed = 1; seed <= 3; ++seed) {
    std::mt19937 rng(seed);
    auto av = normal_floats(rng, static_cast<size_t>(m * k));
    auto bv = random_floats(rng, static_cast<size_t>(k * n), -2.0, 3.0);
    auto r = tg.run({T(DType::F32, {m, k}, to_double(av)), T(DType::F32, {k, n}, to_double(bv))});
    auto A = [&](int64_t i, int64_t kk) { return av[static_cast<size_t>(i * k + kk)]; };
    auto B = [&](int64_t kk, int64_t j) { return bv[static_cast<size_t>(kk * n + j)]; };
    std::vector<float> ikj(static_cast<size_t>(m * n), 0.f), rev(static_cast<size_t>(m * n)),
        fma_tiled(static_cast<size_t>(m * n)), dropped(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j) ikj[static_cast<size_t>(i * n + j)] += A(i, kk) * B(kk, j);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float s = 0;
        for (int64_t kk = k; kk-- > 0;) s += A(i, kk) * B(kk, j);
        rev[static_cast<size_t>(i * n + j)] = s;
        float tiles[16] = {};
        for (int64_t kk = 0; kk < k; ++kk)
          tiles[kk % 16] = std::fma(A(i, kk), B(kk, j), tiles[kk % 16]);
        s = 0;
        for (float t : tiles) s += t;
        fma_tiled[static_cast<size_t>(i * n + j)] = s;
        double d = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          if (kk != (i + j) % k) d += double(A(i, kk)) * B(kk, j);
        dropped[static_cast<size_t>(i * n + j)] = static_cast<float>(d);
      }
    EXPECT_LE(worst_ratio(ikj, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    EXPECT_LE(worst_ratio(rev, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    EXPECT_LE(worst_ratio(fma_tiled, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    EXPECT_GT(worst_ratio(dropped, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
  }
}

// ---------------------------------------------------------------------------
// Transcendental chains and softmax

TEST(InterpBounds, FloatExpTanhChainStaysWithinBound) {
  // y = tanh(exp(x) * 0.3 - 1) / sqrt(x*x + 1), with 0.3 a weak (inexact) f32 constant.
  const int64_t n = 20000;
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({n}));
  auto e = tg.b.unary(OpKind::Exp, x);
  auto t = tg.b.unary(
      OpKind::Tanh,
      tg.b.binary(OpKind::Sub, tg.b.binary(OpKind::Mul, e, tg.c(0.3, DType::F32, S({n}))),
                  tg.c(1.0, DType::F32, S({n}))));
  auto d = tg.b.unary(OpKind::Sqrt,
                      tg.b.binary(OpKind::Add, tg.b.powi(x, 2), tg.c(1.0, DType::F32, S({n}))));
  tg.out(tg.b.binary(OpKind::Div, t, d));
  for (unsigned seed = 1; seed <= 3; ++seed) {
    std::mt19937 rng(seed);
    auto xv = random_floats(rng, static_cast<size_t>(n), -4.0, 4.0);
    auto r = tg.run({T(DType::F32, {n}, to_double(xv))});
    std::vector<float> got(static_cast<size_t>(n));
    for (size_t i = 0; i < got.size(); ++i) {
      float v = xv[i];
      got[i] = std::tanh(std::exp(v) * 0.3f - 1.0f) / std::sqrt(v * v + 1.0f);
    }
    EXPECT_LE(worst_ratio(got, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
    // A 1e-4 relative scale error is far outside it.
    for (auto& g : got) g *= 1.0f + 1e-4f;
    EXPECT_GT(worst_ratio(got, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
  }
}

TEST(InterpBounds, FloatSoftmaxStaysWithinBound) {
  const int64_t rows = 8, n = 1000;
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({rows, n}));
  auto mx = tg.b.broadcast(tg.b.reshape(tg.b.reduce(ir::ReduceKind::Max, x, {1}), S({rows, 1})),
                           S({rows, n}));
  auto ex = tg.b.unary(OpKind::Exp, tg.b.binary(OpKind::Sub, x, mx));
  auto sum = tg.b.broadcast(tg.b.reshape(tg.b.reduce(ir::ReduceKind::Sum, ex, {1}), S({rows, 1})),
                            S({rows, n}));
  tg.out(tg.b.binary(OpKind::Div, ex, sum));
  for (unsigned seed = 1; seed <= 3; ++seed) {
    std::mt19937 rng(seed);
    auto xv = normal_floats(rng, static_cast<size_t>(rows * n), 3.0);
    auto r = tg.run({T(DType::F32, {rows, n}, to_double(xv))});
    std::vector<float> got(xv.size());
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = xv.data() + i * n;
      float m = *std::max_element(row, row + n), s = 0;
      for (int64_t k = 0; k < n; ++k) s += std::exp(row[k] - m);
      const float inv = 1.0f / s;  // reciprocal instead of divide: one more rounding, still fine
      for (int64_t k = 0; k < n; ++k)
        got[static_cast<size_t>(i * n + k)] = std::exp(row[k] - m) * inv;
    }
    EXPECT_LE(worst_ratio(got, r.values[0], r.bounds[0]), 1.0) << "seed " << seed;
  }
}

// ---------------------------------------------------------------------------
// Exactness and special values

TEST(InterpBounds, ExactIntegerOpsHaveZeroBounds) {
  TestGraph tg;
  auto a = tg.in("a", DType::I32, S({3, 4}));
  auto b = tg.in("b", DType::I32, S({4, 2}));
  auto c = tg.b.contract(a, b, {0, 1}, {1, 2}, {0, 2});
  auto s = tg.b.reduce(ir::ReduceKind::Sum, c, {0});
  tg.out(tg.b.binary(OpKind::Mul, tg.b.binary(OpKind::Add, c, c), c));
  tg.out(tg.b.powi(s, 3));
  tg.out(tg.b.convert(s, DType::F32));
  std::vector<double> av(12), bv(8);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<double>(i % 5) - 2;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<double>(i % 3) + 1;
  auto r = tg.run({T(DType::I32, {3, 4}, av), T(DType::I32, {4, 2}, bv)});
  for (auto& bnd : r.bounds)
    for (double e : bnd.data) EXPECT_EQ(e, 0.0);
  // ... while the same contraction in f32 has a nonzero rounding bound.
  TestGraph tf;
  auto fa = tf.in("a", DType::F32, S({3, 4}));
  auto fb = tf.in("b", DType::F32, S({4, 2}));
  tf.out(tf.b.contract(fa, fb, {0, 1}, {1, 2}, {0, 2}));
  auto rf = tf.run({T(DType::F32, {3, 4}, av), T(DType::F32, {4, 2}, bv)});
  EXPECT_GT(*std::max_element(rf.bounds[0].data.begin(), rf.bounds[0].data.end()), 0.0);
}

// A finite mask value (-1e30, not exact in f32, so its bound is u * 1e30) must not
// spread its error to the row max: it cannot win the max, so it cannot move it.
TEST(InterpBounds, LargeFiniteMaskDoesNotLoosenTheRowMax) {
  const int64_t n = 4;
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({n, n}));
  auto row = tg.b.iota(S({n, n}), 0, DType::I32);
  auto col = tg.b.iota(S({n, n}), 1, DType::I32);
  auto causal = tg.b.binary(OpKind::Ge, row, col);
  auto masked = tg.b.select(causal, x, tg.c(-1e30, DType::F32, S({n, n})));
  auto mx = tg.b.reduce(ir::ReduceKind::Max, masked, {1});
  tg.out(mx);
  auto mxb = tg.b.broadcast(tg.b.reshape(mx, S({n, 1})), S({n, n}));
  tg.out(tg.b.unary(OpKind::Exp, tg.b.binary(OpKind::Sub, masked, mxb)));
  // And the binary form: max(x, -1e30) is x, with x's (zero) error.
  tg.out(tg.b.binary(OpKind::Max, x, tg.c(-1e30, DType::F32, S({n, n}))));
  auto r = tg.run({T(DType::F32, {n, n}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})});
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(r.bounds[0].data[static_cast<size_t>(i)], 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(i * n + j);
      EXPECT_LT(r.bounds[1].data[k], 1e-5) << i << "," << j;
      EXPECT_EQ(r.bounds[2].data[k], 0.0);
    }
  // An element whose error could make it win does count.
  TestGraph t2;
  auto a = t2.in("a", DType::F32, S({2}));
  auto big = t2.b.binary(OpKind::Mul, a, t2.c(1e8, DType::F32, S({2})));  // error u * 1e8 * |a|
  t2.out(t2.b.reduce(ir::ReduceKind::Max, big, {0}));
  auto r2 = t2.run({T(DType::F32, {2}, {1.0, 1.0 - 1e-9})});
  EXPECT_GT(r2.bounds[0].data[0], 5.0);  // both candidates are within ~6 of each other's error
}

TEST(InterpBounds, NegInfMaskThenExpIsExactZero) {
  const int64_t n = 4;
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({n, n}));
  auto row = tg.b.iota(S({n, n}), 0, DType::I32);
  auto col = tg.b.iota(S({n, n}), 1, DType::I32);
  auto causal = tg.b.binary(OpKind::Ge, row, col);
  auto masked = tg.b.select(causal, x, tg.c(-kInf, DType::F32, S({n, n})));
  auto mx = tg.b.broadcast(tg.b.reshape(tg.b.reduce(ir::ReduceKind::Max, masked, {1}), S({n, 1})),
                           S({n, n}));
  tg.out(tg.b.unary(OpKind::Exp, tg.b.binary(OpKind::Sub, masked, mx)));
  auto r = tg.run({T(DType::F32, {n, n}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(i * n + j);
      if (j > i) {
        EXPECT_EQ(r.values[0].data[k], 0.0);
        EXPECT_EQ(r.bounds[0].data[k], 0.0);
      } else {
        EXPECT_DOUBLE_EQ(r.values[0].data[k], std::exp(static_cast<double>(j - i)));
        EXPECT_GT(r.bounds[0].data[k], 0.0);
        EXPECT_LT(r.bounds[0].data[k], 1e-5);
      }
    }
}

TEST(InterpBounds, UncertainComparisonWidensSelect) {
  TestGraph tg;
  auto a = tg.in("a", DType::F32, S({2}));
  auto b = tg.in("b", DType::F32, S({2}));
  auto sum = tg.b.binary(OpKind::Add, a, b);  // carries a rounding bound
  auto cmp = tg.b.binary(OpKind::Gt, sum, tg.c(1.0, DType::F32, S({2})));
  tg.out(cmp);
  tg.out(tg.b.select(cmp, tg.c(10.0, DType::F32, S({2})), tg.c(20.0, DType::F32, S({2}))));
  const double tiny = std::ldexp(1.0, -30);  // a + b = 1 + 2^-30: within rounding of 1
  auto r = tg.run({T(DType::F32, {2}, {1.0, 2.0}), T(DType::F32, {2}, {tiny, 0.5})});
  EXPECT_EQ(r.values[0].data, (std::vector<double>{1, 1}));
  EXPECT_EQ(r.bounds[0].data, (std::vector<double>{1, 0}));  // first uncertain, second certain
  EXPECT_EQ(r.values[1].data, (std::vector<double>{10, 10}));
  EXPECT_GE(r.bounds[1].data[0], 10.0);
  EXPECT_EQ(r.bounds[1].data[1], 0.0);
}

TEST(InterpBounds, OverflowIsInfiniteAndNonFiniteResultsExact) {
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({3}));
  tg.out(tg.b.unary(OpKind::Exp, x));
  tg.out(tg.b.unary(OpKind::Log, x));
  auto r = tg.run({T(DType::F32, {3}, {100.0, -kInf, 0.0})});
  EXPECT_EQ(r.bounds[0].data[0], kInf);  // exp(100) overflows f32
  EXPECT_EQ(r.values[0].data[1], 0.0);   // exp(-inf) = 0 exactly
  EXPECT_EQ(r.bounds[0].data[1], 0.0);
  EXPECT_EQ(r.values[1].data[2], -kInf);  // log(0) = -inf must be reproduced
  EXPECT_EQ(r.bounds[1].data[2], 0.0);
  EXPECT_TRUE(std::isnan(r.values[1].data[1]));
  EXPECT_EQ(r.bounds[1].data[1], 0.0);
}

TEST(InterpBounds, PropagationRulesOnKnownNumbers) {
  // Bounds through Mul, Div and a reduce, checked against the formulas by hand.
  const double u =
      std::ldexp(1.0, -24) + std::ldexp(1.0, -53);  // f32's roundoff plus the reference's own
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({2}));
  auto y = tg.in("y", DType::F32, S({2}));
  auto s = tg.b.binary(OpKind::Add, x, y);  // e_s = u|x+y|
  tg.out(s);
  tg.out(tg.b.binary(OpKind::Mul, s, y));            // |y| e_s + u|r|
  tg.out(tg.b.binary(OpKind::Div, y, s));            // |r| e_s / (|s| - e_s) + u|r|
  tg.out(tg.b.reduce(ir::ReduceKind::Max, s, {0}));  // max e
  auto r = tg.run({T(DType::F32, {2}, {1.0, 3.0}), T(DType::F32, {2}, {2.0, -1.0})});
  EXPECT_DOUBLE_EQ(r.bounds[0].data[0], 3 * u);
  EXPECT_DOUBLE_EQ(r.bounds[0].data[1], 2 * u);
  EXPECT_DOUBLE_EQ(r.bounds[1].data[0], 2 * 3 * u + 6 * u);
  EXPECT_DOUBLE_EQ(r.bounds[2].data[0], (2.0 / 3) * 3 * u / (3 - 3 * u) + u * 2.0 / 3);
  EXPECT_DOUBLE_EQ(r.bounds[3].data[0], 3 * u);
}

TEST(InterpBounds, ConvertAndPowIOfUncertainValues) {
  const double u =
      std::ldexp(1.0, -24) + std::ldexp(1.0, -53);  // f32's roundoff plus the reference's own
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({2}));
  auto y = tg.in("y", DType::F32, S({2}));
  auto s = tg.b.binary(OpKind::Sub, x, y);  // e = u|x - y|
  tg.out(tg.b.convert(s, DType::I32));      // e + 1
  tg.out(tg.b.convert(s, DType::Bool));     // certain unless e >= |s|
  tg.out(tg.b.powi(s, -1));                 // 1/s by the Div rule
  tg.out(tg.b.convert(x, DType::I32));      // exact input: exact
  auto r = tg.run({T(DType::F32, {2}, {3.5, 1.0}), T(DType::F32, {2}, {1.0, 1.0})});
  EXPECT_EQ(r.values[0].data, (std::vector<double>{2, 0}));
  EXPECT_DOUBLE_EQ(r.bounds[0].data[0], 2.5 * u + 1);
  EXPECT_EQ(r.bounds[0].data[1], 0.0);  // 1 - 1 = 0 exactly: e = 0
  EXPECT_EQ(r.bounds[1].data, (std::vector<double>{0, 0}));
  const double e = 2.5 * u;
  // (1 + e)^1 - 1 is computed in double: equal to the formula to ~1e-9, never below it.
  const double powi_formula = (1 / 2.5) * e / (2.5 - e) + u / 2.5;
  EXPECT_NEAR(r.bounds[2].data[0], powi_formula, 1e-6 * powi_formula);
  EXPECT_GE(r.bounds[2].data[0], powi_formula);
  EXPECT_EQ(r.values[2].data[1], kInf);  // 1/0 is inf, reproduced exactly
  EXPECT_EQ(r.bounds[2].data[1], 0.0);
  EXPECT_EQ(r.bounds[3].data, (std::vector<double>{0, 0}));
}

TEST(InterpBounds, LargeContractionIsRight) {
  // MLA-decode sized: [16, 512] x [512, 4096] with bounds, through the blocked kernel.
  // (Its speed is measured by bench/frontend_times.sh, not asserted here.)
  const int64_t m = 16, k = 512, n = 4096;
  TestGraph tg;
  auto a = tg.in("a", DType::F32, S({m, k}));
  auto b = tg.in("b", DType::F32, S({n, k}));
  tg.out(tg.b.contract(a, b, {0, 1}, {2, 1}, {0, 2}));
  std::mt19937 rng(3);
  auto av = normal_floats(rng, static_cast<size_t>(m * k));
  auto bv = normal_floats(rng, static_cast<size_t>(n * k));
  auto r = tg.run({T(DType::F32, {m, k}, to_double(av)), T(DType::F32, {n, k}, to_double(bv))});
  double want = 0;
  for (int64_t kk = 0; kk < k; ++kk)
    want += double(av[static_cast<size_t>(5 * k + kk)]) * bv[static_cast<size_t>(77 * k + kk)];
  EXPECT_NEAR(r.values[0].data[5 * n + 77], want, 1e-9);
  // Every row block and the 4-row tail of the kernel: check a few more elements.
  for (int64_t i : {0, 3, 4, 15})
    for (int64_t j : {0, 1, 4095}) {
      double s = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        s += double(av[static_cast<size_t>(i * k + kk)]) * bv[static_cast<size_t>(j * k + kk)];
      EXPECT_NEAR(r.values[0].data[static_cast<size_t>(i * n + j)], s, 1e-9);
      EXPECT_GT(r.bounds[0].data[static_cast<size_t>(i * n + j)], 0.0);
    }
}

TEST(InterpBounds, FloatModuloOfExactOperandsRoundsOnce) {
  // numpy's float32 -1e-8 % 0.5 is fmod (exact) + 0.5, rounded to 0.5f: the bound must
  // allow that rounding; the floor quotient of exact operands stays exact.
  const double u =
      std::ldexp(1.0, -24) + std::ldexp(1.0, -53);  // f32's roundoff plus the reference's own
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({2}));
  auto y = tg.in("y", DType::F32, S({2}));
  tg.out(tg.b.binary(OpKind::Mod, x, y));
  tg.out(tg.b.binary(OpKind::FloorDiv, x, y));
  const float small = -1e-8f;
  auto r = tg.run({T(DType::F32, {2}, {small, 0.75}), T(DType::F32, {2}, {0.5, 0.5})});
  const float got = std::fmod(small, 0.5f) + 0.5f;  // what numpy float32 computes
  EXPECT_EQ(got, 0.5f);
  EXPECT_LE(std::fabs(double(got) - r.values[0].data[0]), r.bounds[0].data[0]);
  EXPECT_GT(std::fabs(double(got) - r.values[0].data[0]), 0.0);
  EXPECT_DOUBLE_EQ(r.bounds[0].data[1], u * 0.25);
  EXPECT_EQ(r.values[1].data, (std::vector<double>{-1, 1}));
  EXPECT_EQ(r.bounds[1].data, (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace ollie::interp

namespace ollie::interp {
namespace {

// Results below the normal range: a float32 exp lands on a subnormal (absolute error up
// to half its spacing) or, in a vector library, on 0; both must be inside the bound
// (library functions may flush: kernels.h, library_underflow_unit), which relative terms
// alone (u·|r|) cannot give. Exact zeros stay exact.
TEST(InterpBounds, SubnormalAndFlushedResultsAreInsideTheBound) {
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({5}));
  tg.out(tg.b.unary(OpKind::Exp, x));
  auto zero = tg.b.binary(OpKind::Sub, x, x);  // exactly 0 in any precision
  tg.out(zero);
  const std::vector<double> xs = {-100.0, -103.25, -95.5, -88.0, -1.0};
  auto r = tg.run({T(DType::F32, {5}, xs)});
  for (size_t i = 0; i < xs.size(); ++i) {
    const double f32 = std::exp(static_cast<float>(xs[i]));  // a correct f32 exp, gradual underflow
    EXPECT_LE(std::fabs(f32 - r.values[0].data[i]), r.bounds[0].data[i]) << xs[i];
    if (r.values[0].data[i] < 0x1p-126) {
      EXPECT_LE(r.values[0].data[i], r.bounds[0].data[i])
          << "flushed to zero must pass at " << xs[i];
    }
  }
  EXPECT_LT(r.bounds[0].data[4], 1e-6);  // exp(-1): only the relative terms
  for (double b : r.bounds[1].data) EXPECT_EQ(b, 0.0);
}

// A subnormal input is exact, as numpy reads it: a kernel that reads it as zero (DAZ) is
// off by all of it, outside the bound.
TEST(InterpBounds, SubnormalInputIsExact) {
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({2}));
  tg.out(tg.b.binary(OpKind::Mul, x, tg.c(0x1p100, DType::F32, S({2}))));
  auto r = tg.run({T(DType::F32, {2}, {0x1p-130, 1.0})});
  EXPECT_LT(r.bounds[0].data[0], 0x1p-30 * 1e-6);  // 2^-130 * 2^100 read as 0 is wrong
  EXPECT_LT(r.bounds[0].data[1], 0x1p100 * 1e-6);
}

// IEEE arithmetic below the normal range rounds gradually (2^-150 at most per operation
// in f32): a correct float32 product and dot product of tiny values are inside the bound,
// the same computed with flush-to-zero (products below 2^-126 read as 0) is not.
TEST(InterpBounds, ArithmeticBelowTheNormalRangeMayNotFlush) {
  const int64_t k = 64;
  TestGraph tg;
  auto a = tg.in("a", DType::F32, S({1, k}));
  auto b = tg.in("b", DType::F32, S({k, 1}));
  tg.out(tg.b.contract(a, b, {0, 1}, {1, 2}, {0, 2}));
  tg.out(tg.b.binary(OpKind::Mul, a, a));
  std::mt19937 rng(3);
  std::vector<float> av = normal_floats(rng, static_cast<size_t>(k)), bv = av;
  for (float& x : av) x *= 0x1p-63f;  // products near 2^-126, about half of them below it
  for (float& x : bv) x *= 0x1p-63f;
  auto r = tg.run({T(DType::F32, {1, k}, to_double(av)), T(DType::F32, {k, 1}, to_double(bv))});
  float gradual = 0, flushed = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    const float p = av[i] * bv[i];  // this test runs without FTZ: gradual underflow
    gradual += p;
    flushed += std::fabs(p) < 0x1p-126f ? 0.0f : p;
  }
  const double want = r.values[0].data[0], bound = r.bounds[0].data[0];
  EXPECT_LE(std::fabs(gradual - want), bound);
  EXPECT_GT(std::fabs(flushed - want), bound);
  EXPECT_LT(bound, 0x1p-134);  // 2·64 roundings of 2^-149 and the relative terms: far below 2^-126
  size_t caught = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    const float p = av[i] * av[i];
    const double w = r.values[1].data[i], e = r.bounds[1].data[i];
    EXPECT_LE(std::fabs(p - w), e) << i;
    caught += std::fabs(p) < 0x1p-126f && p != 0 && w > e;  // a flushed square is outside
  }
  EXPECT_GT(caught, 0u);
}

// ---------------------------------------------------------------------------
// Saturated values: an f32 intermediate that overflows (exp(-g) for g < -88.7) must
// not make everything after it unbounded, and the answer f32 gives must stay inside.

// True iff every f32 result lies within its bound (an infinite bound accepts anything,
// a NaN result is accepted only there).
::testing::AssertionResult all_within(const std::vector<float>& got, const Result& r,
                                      size_t out = 0) {
  for (size_t i = 0; i < got.size(); ++i) {
    const double b = r.bounds[out].data[i], v = r.values[out].data[i], y = got[i];
    if (b == kInf || y == v) continue;
    if (!(std::fabs(y - v) <= b))
      return ::testing::AssertionFailure()
             << "element " << i << ": f32 " << y << " reference " << v << " bound " << b;
  }
  return ::testing::AssertionSuccess();
}

// Inputs that overflow exp in f32 (|x| in [90, 120]) mixed with ordinary ones.
std::vector<float> overflow_mix(unsigned seed, size_t n) {
  std::mt19937 rng(seed);
  auto v = random_floats(rng, n, -6.0, 6.0);
  auto big = random_floats(rng, n, 90.0, 120.0);
  for (size_t i = 0; i < n; i += 3) v[i] = (i % 2 ? 1.0f : -1.0f) * big[i];
  v[0] = -100.0f;
  v[1] = 100.0f;
  return v;
}

TEST(InterpSaturation, SiluSigmoidAndGatedSiluHaveFiniteBoundsThatHoldPastOverflow) {
  const int64_t n = 3000;
  TestGraph tg;
  auto g = tg.in("g", DType::F32, S({n}));
  auto one = tg.c(1.0, DType::F32, S({n}));
  auto denom = tg.b.binary(OpKind::Add, one, tg.b.unary(OpKind::Exp, tg.b.unary(OpKind::Neg, g)));
  tg.out(tg.b.binary(OpKind::Div, g, denom));  // silu
  auto sig = tg.b.binary(OpKind::Div, one, denom);
  tg.out(sig);                               // sigmoid
  tg.out(tg.b.binary(OpKind::Mul, g, sig));  // g * sigmoid(g)
  for (unsigned seed = 1; seed <= 3; ++seed) {
    auto gv = overflow_mix(seed, static_cast<size_t>(n));
    auto r = tg.run({T(DType::F32, {n}, to_double(gv))});
    std::vector<float> silu(gv.size()), sigmoid(gv.size()), gated(gv.size());
    for (size_t i = 0; i < gv.size(); ++i) {
      const float d = 1.0f + std::exp(-gv[i]);  // inf for g < -88.7
      silu[i] = gv[i] / d;
      sigmoid[i] = 1.0f / d;
      gated[i] = gv[i] * sigmoid[i];
    }
    EXPECT_TRUE(all_within(silu, r, 0)) << "seed " << seed;
    EXPECT_TRUE(all_within(sigmoid, r, 1)) << "seed " << seed;
    EXPECT_TRUE(all_within(gated, r, 2)) << "seed " << seed;
    for (size_t k = 0; k < 3; ++k)
      for (size_t i = 0; i < gv.size(); ++i) {
        ASSERT_TRUE(std::isfinite(r.bounds[k].data[i])) << "output " << k << " g = " << gv[i];
        if (gv[i] <= -90.0f) {
          EXPECT_LT(r.bounds[k].data[i], 1e-30) << "output " << k << " g = " << gv[i];
        }
      }
  }
  // Without saturation a wrong answer is still caught: silu(-100) off by 1e-20.
  auto r = tg.run({T(DType::F32, {n}, to_double(overflow_mix(1, static_cast<size_t>(n))))});
  EXPECT_LT(r.bounds[0].data[0], 1e-20);
  EXPECT_LT(r.bounds[0].data[1] / 100.0, 1e-5);  // silu(100) = 100 to f32 accuracy
}

TEST(InterpSaturation, SoftmaxWithoutMaxSubtractionAndSoftplus) {
  const int64_t rows = 4, n = 50;
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({rows, n}));
  auto ex = tg.b.unary(OpKind::Exp, x);
  auto sum = tg.b.broadcast(tg.b.reshape(tg.b.reduce(ir::ReduceKind::Sum, ex, {1}), S({rows, 1})),
                            S({rows, n}));
  tg.out(tg.b.binary(OpKind::Div, ex, sum));
  tg.out(tg.b.unary(
      OpKind::Log, tg.b.binary(OpKind::Add, tg.c(1.0, DType::F32, S({rows, n})), ex)));  // softplus
  std::mt19937 rng(7);
  auto xv = random_floats(rng, static_cast<size_t>(rows * n), -5.0, 5.0);
  xv[3] = 100.0f;  // row 0 overflows in one element
  xv[60] = 95.0f;  // row 1 in two
  xv[61] = 120.0f;
  auto r = tg.run({T(DType::F32, {rows, n}, to_double(xv))});
  std::vector<float> soft(xv.size()), plus(xv.size());
  for (int64_t i = 0; i < rows; ++i) {
    float s = 0;
    for (int64_t k = 0; k < n; ++k) s += std::exp(xv[static_cast<size_t>(i * n + k)]);
    for (int64_t k = 0; k < n; ++k) {
      const size_t j = static_cast<size_t>(i * n + k);
      soft[j] = std::exp(xv[j]) / s;  // inf / inf = NaN where it overflowed, 0 beside it
      plus[j] = std::log(1.0f + std::exp(xv[j]));
    }
  }
  EXPECT_TRUE(all_within(soft, r, 0));
  EXPECT_TRUE(all_within(plus, r, 1));
  // Only the overflowing elements themselves are unbounded; their row neighbours
  // (finite / saturated sum) are tiny and bounded, the other rows ordinary.
  for (size_t j = 0; j < xv.size(); ++j) {
    const bool overflows = xv[j] > 88.8f;
    EXPECT_EQ(std::isinf(r.bounds[0].data[j]), overflows) << j;
    EXPECT_EQ(std::isinf(r.bounds[1].data[j]), overflows) << j;  // softplus(100): f32 gives inf
    if (!overflows && j < 2 * static_cast<size_t>(n)) {
      EXPECT_LT(r.bounds[0].data[j], 1e-30) << j;
    }
  }
  EXPECT_TRUE(std::isinf(plus[3]));
}

TEST(InterpSaturation, ResultNearFltMaxWhoseBoundCrossesItIsUnbounded) {
  // FLT_MAX - 2^102 is below FLT_MAX, but its rounding error reaches past it: an f32
  // implementation may return inf, so no finite bound may exclude inf.
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({2}));
  auto y = tg.in("y", DType::F32, S({2}));
  tg.out(tg.b.binary(OpKind::Add, x, y));
  auto r = tg.run({T(DType::F32, {2}, {static_cast<double>(FLT_MAX), 1.0}),
                   T(DType::F32, {2}, {-0x1p102, 2.0})});
  EXPECT_LT(r.values[0].data[0], static_cast<double>(FLT_MAX));
  EXPECT_EQ(r.bounds[0].data[0], kInf);
  EXPECT_LT(r.bounds[0].data[1], 1e-6);
}

TEST(InterpSaturation, RulesOnSaturatedOperands) {
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({1}));
  auto z = tg.in("z", DType::F32, S({1}));
  auto big = tg.b.unary(OpKind::Exp, x);  // x = 100: saturated
  auto five = tg.c(5.0, DType::F32, S({1}));
  tg.out(tg.b.binary(OpKind::Mul, big, z));     // 0: inf * 0 is NaN -> unbounded
  tg.out(tg.b.binary(OpKind::Min, big, five));  // 1: certainly 5
  tg.out(
      tg.b.select(tg.b.binary(OpKind::Gt, big, five), five, big));  // 2: certain comparison picks 5
  tg.out(tg.b.unary(OpKind::Tanh, big));                            // 3: 1 within f32 accuracy
  tg.out(tg.b.binary(OpKind::Sub, big, big));                       // 4: inf - inf
  tg.out(tg.b.binary(OpKind::Max, big, five));  // 5: still saturated -> inf at the output
  tg.out(tg.b.unary(OpKind::Exp,
                    tg.b.unary(OpKind::Neg, tg.b.binary(OpKind::Mul, big, big))));  // 6: exp(-huge)
  auto r = tg.run({T(DType::F32, {1}, {100.0}), T(DType::F32, {1}, {0.0})});
  EXPECT_EQ(r.bounds[0].data[0], kInf);
  EXPECT_EQ(r.values[1].data[0], 5.0);
  EXPECT_EQ(r.bounds[1].data[0], 0.0);
  EXPECT_EQ(r.values[2].data[0], 5.0);
  EXPECT_EQ(r.bounds[2].data[0], 0.0);
  EXPECT_LT(r.bounds[3].data[0], 1e-6);
  EXPECT_LE(std::fabs(1.0 - r.values[3].data[0]), r.bounds[3].data[0]);
  EXPECT_EQ(r.bounds[4].data[0], kInf);
  EXPECT_EQ(r.bounds[5].data[0], kInf);
  EXPECT_LT(r.bounds[6].data[0], 1e-37);
}

TEST(InterpSaturation, ContractionWithSaturatedTermIsUnboundedOnlyWhereItEnters) {
  // exp(x) @ w with one overflowing element in row 0: row 0 is unbounded (even where
  // w is zero: inf * 0 is NaN), row 1 keeps its ordinary bound.
  TestGraph tg;
  auto x = tg.in("x", DType::F32, S({2, 3}));
  auto w = tg.in("w", DType::F32, S({3, 2}));
  tg.out(tg.b.contract(tg.b.unary(OpKind::Exp, x), w, {0, 1}, {1, 2}, {0, 2}));
  auto r = tg.run(
      {T(DType::F32, {2, 3}, {100, 1, 2, 0.5, 1, 2}), T(DType::F32, {3, 2}, {0, 1, 1, 1, 1, 1})});
  EXPECT_EQ(r.bounds[0].data[0], kInf);
  EXPECT_EQ(r.bounds[0].data[1], kInf);
  EXPECT_LT(r.bounds[0].data[2], 1e-4);
  EXPECT_LT(r.bounds[0].data[3], 1e-4);
}

}  // namespace
}  // namespace ollie::interp
