// Exact values of every op in the reference interpreter on small hand-computed
// tensors, input rounding and shape checking (bounds: interp_bounds_test.cpp).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include "interp/kernels.h"
#include "test_graph.h"

namespace ollie::interp {
namespace {

using ir::DType;
using ir::OpKind;
using testing::S;
using testing::T;
using testing::TestGraph;

constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_values(const Tensor& t, std::vector<int64_t> shape, std::vector<double> want) {
  ASSERT_EQ(t.shape, shape);
  ASSERT_EQ(t.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(t.data[i])) << "element " << i;
    else
      EXPECT_DOUBLE_EQ(t.data[i], want[i]) << "element " << i;
  }
}

TEST(InterpValues, UnaryOps) {
  TestGraph tg;
  auto x = tg.in("x", DType::F64, S({3}));
  for (OpKind k :
       {OpKind::Neg, OpKind::Abs, OpKind::Exp, OpKind::Tanh, OpKind::Erf, OpKind::Sin, OpKind::Cos})
    tg.out(tg.b.unary(k, x));
  auto ax = tg.b.unary(OpKind::Abs, x);
  tg.out(tg.b.unary(OpKind::Log, ax));
  tg.out(tg.b.unary(OpKind::Sqrt, ax));
  tg.out(tg.b.powi(x, 3));
  tg.out(tg.b.powi(x, -2));
  tg.out(tg.b.powi(x, 0));
  std::vector<double> in = {-2.0, 0.5, 4.0};
  auto r = tg.run({T(DType::F64, {3}, in)});
  std::vector<std::function<double(double)>> fs = {[](double v) { return -v; },
                                                   [](double v) { return std::fabs(v); },
                                                   [](double v) { return std::exp(v); },
                                                   [](double v) { return std::tanh(v); },
                                                   [](double v) { return std::erf(v); },
                                                   [](double v) { return std::sin(v); },
                                                   [](double v) { return std::cos(v); },
                                                   [](double v) { return std::log(std::fabs(v)); },
                                                   [](double v) { return std::sqrt(std::fabs(v)); },
                                                   [](double v) { return v * v * v; },
                                                   [](double v) { return 1.0 / (v * v); },
                                                   [](double) { return 1.0; }};
  ASSERT_EQ(r.values.size(), fs.size());
  for (size_t k = 0; k < fs.size(); ++k)
    expect_values(r.values[k], {3}, {fs[k](in[0]), fs[k](in[1]), fs[k](in[2])});
}

TEST(InterpValues, BinaryOps) {
  TestGraph tg;
  auto a = tg.in("a", DType::F64, S({4}));
  auto b = tg.in("b", DType::F64, S({4}));
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min,
                   OpKind::FloorDiv, OpKind::Mod})
    tg.out(tg.b.binary(k, a, b));
  auto r = tg.run({T(DType::F64, {4}, {7, -7, 2.5, NAN}), T(DType::F64, {4}, {2, 2, -0.5, 1})});
  expect_values(r.values[0], {4}, {9, -5, 2, NAN});
  expect_values(r.values[1], {4}, {5, -9, 3, NAN});
  expect_values(r.values[2], {4}, {14, -14, -1.25, NAN});
  expect_values(r.values[3], {4}, {3.5, -3.5, -5, NAN});
  expect_values(r.values[4], {4}, {7, 2, 2.5, NAN});  // NaN propagates like np.maximum
  expect_values(r.values[5], {4}, {2, -7, -0.5, NAN});
  expect_values(r.values[6], {4}, {3, -4, -5, NAN});  // numpy floor division
  expect_values(r.values[7], {4}, {1, 1, 0, NAN});    // sign of the divisor
}

TEST(InterpValues, IntegerFloorDivModAndPow) {
  TestGraph tg;
  auto a = tg.in("a", DType::I32, S({3}));
  auto b = tg.in("b", DType::I32, S({3}));
  tg.out(tg.b.binary(OpKind::FloorDiv, a, b));
  tg.out(tg.b.binary(OpKind::Mod, a, b));
  auto x = tg.in("x", DType::F64, S({2}));
  auto y = tg.in("y", DType::F64, S({2}));
  tg.out(tg.b.binary(OpKind::Pow, x, y));
  auto r = tg.run({T(DType::I32, {3}, {-7, 7, 5}), T(DType::I32, {3}, {2, -2, 0}),
                   T(DType::F64, {2}, {2, 9}), T(DType::F64, {2}, {0.5, -0.5})});
  expect_values(r.values[0], {3}, {-4, -4, 0});
  expect_values(r.values[1], {3}, {1, -1, 0});
  expect_values(r.values[2], {2}, {std::sqrt(2.0), 1.0 / 3.0});
}

TEST(InterpValues, ComparisonsLogicAndSelect) {
  TestGraph tg;
  auto a = tg.in("a", DType::F32, S({4}));
  auto b = tg.in("b", DType::F32, S({4}));
  for (OpKind k : {OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge, OpKind::Eq, OpKind::Ne})
    tg.out(tg.b.binary(k, a, b));
  auto lt = tg.b.binary(OpKind::Lt, a, b);
  auto eq = tg.b.binary(OpKind::Eq, a, b);
  tg.out(tg.b.binary(OpKind::And, lt, eq));
  tg.out(tg.b.binary(OpKind::Or, lt, eq));
  tg.out(tg.b.unary(OpKind::Not, lt));
  tg.out(tg.b.select(lt, a, b));
  auto r = tg.run({T(DType::F32, {4}, {1, 2, 3, NAN}), T(DType::F32, {4}, {2, 2, 1, 0})});
  expect_values(r.values[0], {4}, {1, 0, 0, 0});
  expect_values(r.values[1], {4}, {1, 1, 0, 0});
  expect_values(r.values[2], {4}, {0, 0, 1, 0});
  expect_values(r.values[3], {4}, {0, 1, 1, 0});
  expect_values(r.values[4], {4}, {0, 1, 0, 0});
  expect_values(r.values[5], {4}, {1, 0, 1, 1});  // NaN != x is true
  expect_values(r.values[6], {4}, {0, 0, 0, 0});
  expect_values(r.values[7], {4}, {1, 1, 0, 0});
  expect_values(r.values[8], {4}, {0, 1, 1, 1});
  expect_values(r.values[9], {4}, {1, 2, 1, 0});  // where(a < b, a, b)
  EXPECT_EQ(r.values[0].dtype, DType::Bool);
  for (auto& bnd : r.bounds)
    for (double e : bnd.data) EXPECT_EQ(e, 0.0);  // exact inputs: certain
}

TEST(InterpValues, InputsAreRoundedToTheParamDtype) {
  TestGraph tg;
  tg.out(tg.in("f", DType::F32, S({2})));
  tg.out(tg.in("i", DType::I32, S({3})));
  tg.out(tg.in("p", DType::Bool, S({2})));
  auto r = tg.run({T(DType::F64, {2}, {0.1, 1.0 + 1e-12}), T(DType::F64, {3}, {2.7, -2.7, 5}),
                   T(DType::F64, {2}, {0.0, -3.0})});
  expect_values(r.values[0], {2}, {static_cast<double>(0.1f), 1.0});
  EXPECT_NE(r.values[0].data[0], 0.1);
  expect_values(r.values[1], {3}, {2, -2, 5});
  expect_values(r.values[2], {2}, {0, 1});
  for (auto& bnd : r.bounds)
    for (double e : bnd.data) EXPECT_EQ(e, 0.0);
}

TEST(InterpValues, ConvertRoundsLikeAstype) {
  TestGraph tg;
  auto x = tg.in("x", DType::F64, S({4}));
  tg.out(tg.b.convert(x, DType::F32));
  tg.out(tg.b.convert(x, DType::I32));
  tg.out(tg.b.convert(x, DType::Bool));
  auto f32 = tg.b.convert(x, DType::F32);
  tg.out(tg.b.convert(f32, DType::F64));
  auto r = tg.run({T(DType::F64, {4}, {0.1, -2.5, 0.0, 16777217.0})});
  expect_values(r.values[0], {4}, {static_cast<double>(0.1f), -2.5, 0.0, 16777216.0});
  expect_values(r.values[1], {4}, {0, -2, 0, 16777217.0});
  expect_values(r.values[2], {4}, {1, 1, 0, 1});
  expect_values(r.values[3], {4}, {static_cast<double>(0.1f), -2.5, 0.0, 16777216.0});
  for (auto& bnd : r.bounds)
    for (double e : bnd.data) EXPECT_EQ(e, 0.0);  // exact input rounds exactly
}

TEST(InterpValues, ConstIotaAndDimConst) {
  TestGraph tg;
  tg.g.bound_dims = {{"N", 3}};
  ir::Shape sn = {ir::DimExpr::constant(2), ir::DimExpr::symbol("N")};
  auto x = tg.in("x", DType::F32, sn);
  tg.out(tg.b.iota(sn, 0, DType::F32));
  tg.out(tg.b.iota(sn, 1, DType::I32));
  auto n = tg.b.dim_constant(ir::DimExpr::symbol("N") * ir::DimExpr::constant(2), DType::F32);
  tg.out(n);
  tg.out(tg.b.constant(0.1, DType::F32));
  tg.out(tg.b.constant(0.5, DType::F32));
  tg.out(x);
  auto r = tg.run({T(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  expect_values(r.values[0], {2, 3}, {0, 0, 0, 1, 1, 1});
  expect_values(r.values[1], {2, 3}, {0, 1, 2, 0, 1, 2});
  expect_values(r.values[2], {}, {6});
  expect_values(r.values[3], {}, {0.1});  // the literal's exact value, not float(0.1)
  EXPECT_DOUBLE_EQ(r.bounds[3].data[0], 0.1 * std::ldexp(1.0, -24));
  EXPECT_EQ(r.bounds[4].data[0], 0.0);  // 0.5 is exact in f32
  EXPECT_EQ(r.bounds[2].data[0], 0.0);
}

TEST(InterpValues, LayoutOps) {
  TestGraph tg;
  auto x = tg.in("x", DType::F64, S({2, 3}));
  auto row = tg.in("row", DType::F64, S({1, 3}));
  auto col = tg.in("col", DType::F64, S({2, 1}));
  tg.out(tg.b.broadcast(row, S({2, 3})));  // 0
  tg.out(tg.b.broadcast(col, S({2, 3})));  // 1
  tg.out(tg.b.reshape(x, S({3, 2})));      // 2
  tg.out(tg.b.transpose(x, {1, 0}));       // 3
  auto c = ir::DimExpr::constant;
  tg.out(tg.b.slice(x, {{c(0), c(2), 1}, {c(0), c(3), 2}}));  // 4: x[:, ::2]
  tg.out(tg.b.slice(x, {{c(1), c(2), 1}, {c(1), c(3), 1}}));  // 5: x[1:, 1:]
  tg.out(tg.b.concat({x, col}, 1));                           // 6
  tg.out(tg.b.concat({x, row}, 0));                           // 7
  auto r = tg.run({T(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6}), T(DType::F64, {1, 3}, {10, 20, 30}),
                   T(DType::F64, {2, 1}, {7, 8})});
  expect_values(r.values[0], {2, 3}, {10, 20, 30, 10, 20, 30});
  expect_values(r.values[1], {2, 3}, {7, 7, 7, 8, 8, 8});
  expect_values(r.values[2], {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_values(r.values[3], {3, 2}, {1, 4, 2, 5, 3, 6});
  expect_values(r.values[4], {2, 2}, {1, 3, 4, 6});
  expect_values(r.values[5], {1, 2}, {5, 6});
  expect_values(r.values[6], {2, 4}, {1, 2, 3, 7, 4, 5, 6, 8});
  expect_values(r.values[7], {3, 3}, {1, 2, 3, 4, 5, 6, 10, 20, 30});
}

TEST(InterpValues, Transpose3dAndReduceAxes) {
  TestGraph tg;
  auto x = tg.in("x", DType::F64, S({2, 3, 4}));
  tg.out(tg.b.transpose(x, {2, 0, 1}));
  tg.out(tg.b.reduce(ir::ReduceKind::Sum, x, {0, 2}));
  tg.out(tg.b.reduce(ir::ReduceKind::Max, x, {1}));
  tg.out(tg.b.reduce(ir::ReduceKind::Min, x, {0}));
  tg.out(tg.b.reduce(ir::ReduceKind::Sum, x, {0, 1, 2}));
  std::vector<double> data(24);
  for (int i = 0; i < 24; ++i) data[static_cast<size_t>(i)] = (i * 7) % 11;  // not monotone
  auto r = tg.run({T(DType::F64, {2, 3, 4}, data)});
  auto at = [&](int i, int j, int k) { return data[static_cast<size_t>(i * 12 + j * 4 + k)]; };
  std::vector<double> tr, sum02, max1, min0;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) tr.push_back(at(i, j, k));
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) s += at(i, j, k);
    sum02.push_back(s);
  }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double m = -1e300;
      for (int j = 0; j < 3; ++j) m = std::max(m, at(i, j, k));
      max1.push_back(m);
    }
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k) min0.push_back(std::min(at(0, j, k), at(1, j, k)));
  double total = 0;
  for (double d : data) total += d;
  expect_values(r.values[0], {4, 2, 3}, tr);
  expect_values(r.values[1], {3}, sum02);
  expect_values(r.values[2], {2, 4}, max1);
  expect_values(r.values[3], {3, 4}, min0);
  expect_values(r.values[4], {}, {total});
}

TEST(InterpValues, ContractAsMatmulBatchedAndEinsum) {
  TestGraph tg;
  auto a = tg.in("a", DType::F64, S({2, 3}));
  auto b = tg.in("b", DType::F64, S({3, 2}));
  tg.out(tg.b.contract(a, b, {0, 1}, {1, 2}, {0, 2}));        // a @ b
  tg.out(tg.b.contract(a, b, {0, 1}, {1, 2}, {2, 0}));        // (a @ b).T
  tg.out(tg.b.contract(a, a, {0, 1}, {2, 1}, {0, 2}));        // a @ a.T
  tg.out(tg.b.contract(a, b, {0, 1}, {2, 3}, {0, 1, 2, 3}));  // outer product
  auto p = tg.in("p", DType::F64, S({2, 2, 3}));
  auto q = tg.in("q", DType::F64, S({2, 3, 2}));
  tg.out(tg.b.contract(p, q, {9, 0, 1}, {9, 1, 2}, {9, 0, 2}));  // batched matmul
  auto r =
      tg.run({T(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6}), T(DType::F64, {3, 2}, {1, 2, 3, 4, 5, 6}),
              T(DType::F64, {2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}),
              T(DType::F64, {2, 3, 2}, {1, 2, 3, 4, 5, 6, 1, 1, 2, 2, 3, 3})});
  expect_values(r.values[0], {2, 2}, {22, 28, 49, 64});
  expect_values(r.values[1], {2, 2}, {22, 49, 28, 64});
  expect_values(r.values[2], {2, 2}, {14, 32, 32, 77});
  EXPECT_EQ(r.values[3].shape, (std::vector<int64_t>{2, 3, 3, 2}));
  EXPECT_DOUBLE_EQ(r.values[3].data[1 * 18 + 2 * 6 + 1 * 2 + 0], 6.0 * 3.0);  // a[1,2] * b[1,0]
  expect_values(r.values[4], {2, 2, 2}, {22, 28, 49, 64, 1, 1, 2, 2});
}

// ExpContract: sum_k exp(s - M) v with M the row's max (0 for a row of -inf), in exp and
// exp2 forms, with and without values; +inf and NaN scores give NaN as exp(s - max s) does.
TEST(InterpValues, ExpContractIsTheSumWeightedByExpOfTheScoresLessTheirMax) {
  const double inf = std::numeric_limits<double>::infinity();
  TestGraph tg;
  auto s = tg.in("s", DType::F64, S({4, 4}));
  auto v = tg.in("v", DType::F64, S({4, 2}));
  tg.out(tg.b.exp_contract(s, v, {0, 1}, {1, 2}, {0, 2}, false));
  tg.out(tg.b.exp_contract(s, -1, {0, 1}, {}, {0}, false));
  tg.out(tg.b.exp_contract(s, v, {0, 1}, {1, 2}, {2, 0}, true));  // exp2, transposed result
  const std::vector<double> sv = {1, 3,   -inf, 2, -inf, -inf, -inf, -inf,
                                  0, inf, 1,    2, 5,    NAN,  1,    1};
  const std::vector<double> vv = {1, 2, 3, 4, 5, 6, 7, 8};
  auto r = tg.run({T(DType::F64, {4, 4}, sv), T(DType::F64, {4, 2}, vv)});
  const double w0 = std::exp(1 - 3.0), w1 = 1, w3 = std::exp(2 - 3.0);
  expect_values(r.values[1], {4}, {w0 + w1 + w3, 0, NAN, NAN});
  EXPECT_NEAR(r.values[0].data[0], w0 * 1 + w1 * 3 + w3 * 7, 1e-12);
  EXPECT_NEAR(r.values[0].data[1], w0 * 2 + w1 * 4 + w3 * 8, 1e-12);
  EXPECT_EQ(r.values[0].data[2], 0.0);  // the row of -inf adds nothing
  EXPECT_TRUE(std::isnan(r.values[0].data[4]) && std::isnan(r.values[0].data[6]));
  const double b0 = std::exp2(1 - 3.0), b3 = std::exp2(2 - 3.0);
  EXPECT_EQ(r.values[2].shape, (std::vector<int64_t>{2, 4}));
  EXPECT_NEAR(r.values[2].data[0], b0 * 1 + 3 + b3 * 7, 1e-12);
  EXPECT_NEAR(r.values[2].data[4], b0 * 2 + 4 + b3 * 8, 1e-12);
}

// In f32 the bound covers the online rescalings: it exceeds the bound of the same sum
// written as exp(s - max) then a contraction, by a term that grows with the key count.
TEST(InterpBounds, ExpContractAllowsForTheRescalingsOfAnOnlineSum) {
  for (int64_t n : {4, 64, 1024}) {
    TestGraph online, plain;
    auto s1 = online.in("s", DType::F32, S({1, n}));
    online.out(online.b.exp_contract(s1, -1, {0, 1}, {}, {0}, false));
    auto s2 = plain.in("s", DType::F32, S({1, n}));
    auto m = plain.b.reshape(plain.b.reduce(ir::ReduceKind::Max, s2, {1}), S({1, 1}));
    auto e = plain.b.unary(OpKind::Exp,
                           plain.b.binary(OpKind::Sub, s2, plain.b.broadcast(m, S({1, n}))));
    plain.out(plain.b.reduce(ir::ReduceKind::Sum, e, {1}));
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<double>(i % 7) * 0.25;
    const auto ro = online.run({T(DType::F32, {1, n}, x)}),
               rp = plain.run({T(DType::F32, {1, n}, x)});
    EXPECT_NEAR(ro.values[0].data[0], rp.values[0].data[0], 1e-9 * rp.values[0].data[0]);
    const double extra = ro.bounds[0].data[0] - rp.bounds[0].data[0];
    // At least one rounded rescale (exp and product: (K_T + 2) u) per step of the growth.
    const double u = 0x1p-24;
    EXPECT_GT(extra, 9.0 * u * ollie::interp::detail::growth(static_cast<double>(n)) *
                         ro.values[0].data[0])
        << n;
    EXPECT_TRUE(std::isfinite(ro.bounds[0].data[0]));
  }
}

// Brute-force einsum for checking general label patterns.
std::vector<double> einsum(const Tensor& a, const std::vector<int>& la, const Tensor& b,
                           const std::vector<int>& lb, const std::vector<int>& lo,
                           std::map<int, int64_t> size) {
  std::vector<int> all;
  for (auto& [l, s] : size) all.push_back(l);
  std::vector<int64_t> out_shape;
  for (int l : lo) out_shape.push_back(size[l]);
  std::vector<double> out(static_cast<size_t>(ir::element_count(out_shape)), 0.0);
  std::map<int, int64_t> idx;
  for (int l : all) idx[l] = 0;
  auto flat = [&](const std::vector<int>& ls) {
    int64_t f = 0;
    for (int l : ls) f = f * size[l] + idx[l];
    return static_cast<size_t>(f);
  };
  while (true) {
    out[flat(lo)] += a.data[flat(la)] * b.data[flat(lb)];
    size_t d = 0;
    for (; d < all.size(); ++d) {
      if (++idx[all[d]] < size[all[d]]) break;
      idx[all[d]] = 0;
    }
    if (d == all.size()) break;
  }
  return out;
}

TEST(InterpValues, EinsumLabelPatternsMatchBruteForce) {
  struct Case {
    std::vector<int> la, lb, lo;
  };
  std::map<int, int64_t> size = {{0, 2}, {1, 3}, {2, 4}, {3, 5}};
  std::vector<Case> cases = {
      {{0, 1}, {1, 2}, {2, 0}},           // ij,jk->ki
      {{0, 1, 2}, {2, 1}, {0}},           // ijk,kj->i (two summed labels)
      {{0, 1}, {1}, {0}},                 // matvec
      {{0, 1}, {2, 1}, {}},               // ij,kj-> (full contraction with one side-only label)
      {{3, 0, 1}, {1, 2, 3}, {0, 3, 2}},  // batch label in the middle of the output
      {{1, 1}, {1, 2}, {2}},              // diagonal: sum_j a[j,j] b[j,k]
  };
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-3, 3);
  for (const auto& cs : cases) {
    TestGraph tg;
    std::vector<int64_t> sa, sb;
    for (int l : cs.la) sa.push_back(size[l]);
    for (int l : cs.lb) sb.push_back(size[l]);
    auto a = tg.in("a", DType::F64, S(sa));
    auto b = tg.in("b", DType::F64, S(sb));
    tg.out(tg.b.contract(a, b, cs.la, cs.lb, cs.lo));
    Tensor ta = T(DType::F64, sa, std::vector<double>(static_cast<size_t>(ir::element_count(sa))));
    Tensor tb = T(DType::F64, sb, std::vector<double>(static_cast<size_t>(ir::element_count(sb))));
    for (double& v : ta.data) v = small(rng);
    for (double& v : tb.data) v = small(rng);
    auto r = tg.run({ta, tb});
    std::map<int, int64_t> used;  // only this case's labels are iterated
    for (int l : cs.la) used[l] = size[l];
    for (int l : cs.lb) used[l] = size[l];
    auto want = einsum(ta, cs.la, tb, cs.lb, cs.lo, used);
    ASSERT_EQ(r.values[0].data.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(r.values[0].data[i], want[i]) << "element " << i;
  }
}

// Every output element of a contraction adds its terms one at a time, in k order, each
// step a fused multiply-add where the interpreter's host has one (a multiply and an add
// otherwise), whatever the tiling: shapes around the kernel's tile edges (4 rows, 24
// columns, 128 terms per pass) and a batch. Values of mixed magnitudes and exact zeros, so
// that another order or another rounding would show in the last bits.
TEST(InterpValues, ContractionAddsTermsInOrderWhateverTheTiling) {
  const bool fused = ollie::interp::detail::contraction_fuses();
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 9);
  for (int64_t batch : {1, 2})
    for (int64_t m : {1, 3, 4, 5, 9})
      for (int64_t n : {1, 23, 24, 25, 50})
        for (int64_t k : {1, 127, 128, 129, 300}) {
          TestGraph tg;
          auto a = tg.in("a", DType::F64, S({batch, m, k}));
          auto b = tg.in("b", DType::F64, S({batch, k, n}));
          tg.out(tg.b.contract(a, b, {9, 0, 1}, {9, 1, 2}, {9, 0, 2}));
          auto draw = [&](int64_t count) {
            std::vector<double> v(static_cast<size_t>(count));
            for (double& x : v)
              x = pick(rng) == 0 ? 0.0 : normal(rng) * std::ldexp(1.0, pick(rng) * 3 - 12);
            return v;
          };
          const Tensor ta = T(DType::F64, {batch, m, k}, draw(batch * m * k));
          const Tensor tb = T(DType::F64, {batch, k, n}, draw(batch * k * n));
          const auto r = tg.run({ta, tb});
          for (int64_t bt = 0; bt < batch; ++bt)
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double c = 0.0;
                for (int64_t kk = 0; kk < k; ++kk) {
                  const double x = ta.data[static_cast<size_t>((bt * m + i) * k + kk)];
                  const double y = tb.data[static_cast<size_t>((bt * k + kk) * n + j)];
                  if (fused) {
                    c = std::fma(x, y, c);
                  } else {
                    const volatile double product = x * y;
                    c += product;
                  }
                }
                const double got = r.values[0].data[static_cast<size_t>((bt * m + i) * n + j)];
                ASSERT_EQ(std::memcmp(&got, &c, sizeof c), 0)
                    << "batch " << batch << " m " << m << " n " << n << " k " << k << " at [" << bt
                    << ", " << i << ", " << j << "]: " << got << " vs " << c;
              }
        }
}

// The strided gather behind every layout op and contraction operand, against the plain
// definition: transposes of every axis order (the blocked path when the source is
// contiguous along the second-to-last axis), broadcasts (stride 0) and an offset.
TEST(InterpValues, GatherCopiesEveryStridedView) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t rank = 1 + static_cast<size_t>(rng() % 4);
    std::vector<int64_t> shape(rank);
    for (auto& d : shape) d = 1 + static_cast<int64_t>(rng() % (rank <= 2 ? 40 : 12));
    std::vector<size_t> perm(rank);
    std::iota(perm.begin(), perm.end(), size_t{0});
    std::shuffle(perm.begin(), perm.end(), rng);
    // The source: dense in the permuted order, one axis perhaps broadcast, after an offset.
    std::vector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    const size_t broadcast = rng() % 5 == 0 ? rng() % rank : rank;
    for (size_t i = rank; i-- > 0;) {
      if (perm[i] == broadcast) continue;
      strides[perm[i]] = stride;
      stride *= shape[perm[i]];
    }
    const int64_t offset = static_cast<int64_t>(rng() % 7);
    std::vector<double> src(static_cast<size_t>(stride + offset));
    std::iota(src.begin(), src.end(), 0.0);
    std::vector<double> got(static_cast<size_t>(ir::element_count(shape)), -1.0), want;
    detail::gather(src.data(), shape, strides, offset, got.data());
    std::vector<int64_t> idx(rank, 0);
    for (size_t flat = 0; flat < got.size(); ++flat) {
      int64_t at = offset;
      for (size_t d = 0; d < rank; ++d) at += idx[d] * strides[d];
      want.push_back(src[static_cast<size_t>(at)]);
      for (size_t d = rank; d-- > 0;)
        if (++idx[d] < shape[d])
          break;
        else
          idx[d] = 0;
    }
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

TEST(InterpValues, EvaluationStopsWhenCancelled) {
  TestGraph tg;
  auto x = tg.in("x", DType::F64, S({3}));
  tg.out(tg.b.unary(OpKind::Neg, x));
  const std::vector<Tensor> in = {T(DType::F64, {3}, {1, 2, 3})};
  std::atomic<bool> cancel{false};
  EXPECT_EQ(evaluate(tg.g, in, &cancel).values[0].data, (std::vector<double>{-1, -2, -3}));
  cancel = true;
  EXPECT_THROW(evaluate(tg.g, in, &cancel), ollie::interp::Cancelled);
}

TEST(InterpValues, SymbolicDimsAndRepeatedOutputs) {
  TestGraph tg;
  tg.g.bound_dims = {{"N", 5}};
  auto x = tg.in("x", DType::F64, {ir::DimExpr::symbol("N")});
  auto y = tg.b.unary(OpKind::Neg, x);
  tg.out(y);
  tg.out(y);
  auto r = tg.run({T(DType::F64, {5}, {1, 2, 3, 4, 5})});
  expect_values(r.values[0], {5}, {-1, -2, -3, -4, -5});
  expect_values(r.values[1], {5}, {-1, -2, -3, -4, -5});
}

TEST(InterpErrors, InputShapeMismatchNamesParamAndShapes) {
  TestGraph tg;
  tg.g.bound_dims = {{"M", 4}, {"K", 3}};
  auto x = tg.in("weights", DType::F32, {ir::DimExpr::symbol("M"), ir::DimExpr::symbol("K")});
  tg.out(x);
  try {
    tg.run({T(DType::F32, {3, 4}, std::vector<double>(12, 0.0))});
    FAIL() << "no error";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'weights'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[M, K]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 3]"), std::string::npos) << msg;
  }
  EXPECT_THROW(tg.run({}), UserError);
}

}  // namespace
}  // namespace ollie::interp
