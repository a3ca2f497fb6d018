// Tests of the verifier's random numbers (support/random.h) and of the inputs the suites
// draw with them (make_inputs): determinism per seed, and statistics honest enough that
// the suites test what they claim (normal moments and histogram, the ziggurat's tail,
// unbiased integers, ~1% special values, the integer-exact range covered end to end).
#include "support/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "spec/spec.h"
#include "support/half.h"
#include "verify/polynomial.h"
#include "verify/verify.h"

namespace {

namespace r = ollie::random;
namespace v = ollie::verify;

// Standard normal CDF.
double phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST(Random, SameSeedSameSequenceAndStreamsDiffer) {
  r::Xoshiro256 a(42), b(42), c(43), s0(42, 0), s1(42, 1), s0again(42, 0);
  int differ_seed = 0, differ_stream = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differ_seed += x != c.next();
    const uint64_t y = s0.next();
    EXPECT_EQ(y, s0again.next());
    differ_stream += y != s1.next();
  }
  EXPECT_EQ(differ_seed, 1000);
  EXPECT_EQ(differ_stream, 1000);
}

TEST(Random, UniformBitsAreBalanced) {
  r::Xoshiro256 g(7);
  constexpr int n = 200000;
  std::vector<int> ones(64, 0);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t x = g.next();
    for (int b = 0; b < 64; ++b) ones[static_cast<size_t>(b)] += (x >> b) & 1;
    sum += g.uniform();
  }
  // Each bit is a fair coin: n/2 +- 5 sigma (sigma = sqrt(n)/2).
  for (int b = 0; b < 64; ++b)
    EXPECT_NEAR(ones[static_cast<size_t>(b)], n / 2, 5 * std::sqrt(n) / 2) << "bit " << b;
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
}

TEST(Random, BelowIsUnbiased) {
  r::Xoshiro256 g(11);
  constexpr int n = 300000;
  for (uint32_t range : {3u, 17u, 100u, 363u, 2049u}) {
    std::vector<int> count(range, 0);
    for (int i = 0; i < n; ++i) {
      const uint32_t x = r::below(g, range);
      ASSERT_LT(x, range);
      ++count[x];
    }
    const double expected = static_cast<double>(n) / static_cast<double>(range);
    double chi2 = 0;
    for (int c : count) chi2 += (c - expected) * (c - expected) / expected;
    // Chi-square with range-1 degrees of freedom: mean df, sd sqrt(2 df); 6 sd is far out.
    const double df = static_cast<double>(range - 1);
    EXPECT_LT(chi2, df + 6 * std::sqrt(2 * df)) << "range " << range;
  }
  EXPECT_EQ(r::below(g, 1), 0u);
}

TEST(Random, NormalHasTheMomentsAndShapeOfTheStandardNormal) {
  r::Xoshiro256 g(2024);
  constexpr int n = 1000000;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  int beyond_tail = 0, beyond_3 = 0;
  // Histogram on [-4, 4] in steps of 0.25, plus the two tails.
  constexpr int bins = 32;
  std::vector<int> hist(bins + 2, 0);
  for (int i = 0; i < n; ++i) {
    const double x = r::normal(g);
    ASSERT_TRUE(std::isfinite(x));
    s1 += x, s2 += x * x, s3 += x * x * x, s4 += x * x * x * x;
    beyond_tail += std::fabs(x) > r::kZigR;
    beyond_3 += std::fabs(x) > 3;
    const int b = x < -4 ? 0 : x >= 4 ? bins + 1 : 1 + static_cast<int>(std::floor((x + 4) / 0.25));
    ++hist[static_cast<size_t>(b)];
  }
  const double mean = s1 / n, var = s2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(n));           // sd of the mean: 1/sqrt(n)
  EXPECT_NEAR(var, 1.0, 5 * std::sqrt(2.0 / n));      // sd of the variance: sqrt(2/n)
  EXPECT_NEAR(s3 / n, 0.0, 5 * std::sqrt(15.0 / n));  // skewness 0 (sd sqrt(15/n))
  EXPECT_NEAR(s4 / n, 3.0, 5 * std::sqrt(96.0 / n));  // kurtosis 3 (sd sqrt(96/n))
  // The tail beyond r = 3.654 (drawn by the ziggurat's separate tail code) and beyond 3.
  const double tail = 2 * n * phi(-r::kZigR), three = 2 * n * phi(-3.0);
  EXPECT_NEAR(beyond_tail, tail, 5 * std::sqrt(tail));
  EXPECT_NEAR(beyond_3, three, 5 * std::sqrt(three));
  // Chi-square of the histogram against the normal CDF.
  double chi2 = 0;
  for (int b = 0; b < bins + 2; ++b) {
    const double lo = b == 0 ? -INFINITY : -4 + 0.25 * (b - 1);
    const double hi = b == bins + 1 ? INFINITY : -4 + 0.25 * b;
    const double expected = n * (phi(hi) - phi(lo));
    chi2 += (hist[static_cast<size_t>(b)] - expected) * (hist[static_cast<size_t>(b)] - expected) /
            expected;
  }
  const double df = bins + 1;
  EXPECT_LT(chi2, df + 6 * std::sqrt(2 * df));
}

TEST(Random, NormalIsSymmetricInEveryLayer) {
  // The sign comes from its own bit: positive and negative draws balance in the
  // rectangles, the wedges and the tail alike.
  r::Xoshiro256 g(5);
  constexpr int n = 1000000;
  int positive = 0, positive_far = 0, far = 0;
  for (int i = 0; i < n; ++i) {
    const double x = r::normal(g);
    positive += x > 0;
    if (std::fabs(x) > 2.5) {
      ++far;
      positive_far += x > 0;
    }
  }
  EXPECT_NEAR(positive, n / 2, 5 * std::sqrt(n) / 2);
  EXPECT_NEAR(positive_far, far / 2, 5 * std::sqrt(far) / 2);
}

ollie::ir::Graph graph_of(const std::string& source) {
  return ollie::spec::compile_spec("t.py", "import numpy as np\n" + source, {});
}

TEST(RandomInputs, SameSeedSameInputsOtherSeedOthers) {
  const auto g = graph_of(
      "DIMS = dict(M=300, N=700)\n"
      "def f(x: \"f32[M, N]\", y: \"f64[N]\") -> \"f64[M, N]\":\n    return x + y\n");
  for (auto d : {v::Distribution::Normal, v::Distribution::Wide, v::Distribution::Special,
                 v::Distribution::Offset}) {
    const auto a = v::make_inputs(g, 99, d), b = v::make_inputs(g, 99, d),
               c = v::make_inputs(g, 100, d);
    ASSERT_EQ(a.size(), 2u);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].data.size(), b[i].data.size());
      for (size_t k = 0; k < a[i].data.size(); ++k) {
        const double x = a[i].data[k], y = b[i].data[k];
        ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << k;
        ASSERT_EQ(std::signbit(x), std::signbit(y)) << k;
      }
      size_t same = 0;
      for (size_t k = 0; k < a[i].data.size(); ++k) same += a[i].data[k] == c[i].data[k];
      EXPECT_LT(same, a[i].data.size() / 50);
    }
  }
}

TEST(RandomInputs, DrawnByAnyNumberOfThreadsTheSame) {
  // Several 64Ki-element chunks per parameter, of every dtype: the verifier draws a
  // suite's inputs with two threads, `ollie eval` with one.
  const auto g = graph_of(
      "DIMS = dict(M=500, N=700)\n"
      "def f(x: \"f32[M, N]\", y: \"f64[N, M]\", i: \"i32[M, N]\", b: \"bool[M, N]\") -> \"f64[M, "
      "N]\":\n"
      "    return np.where(b, x + y.T, i)\n");
  for (auto d : {v::Distribution::Normal, v::Distribution::Special, v::Distribution::Wide}) {
    const auto one = v::make_inputs(g, 31, d, 1);
    for (int threads : {2, 5}) {
      const auto many = v::make_inputs(g, 31, d, threads);
      ASSERT_EQ(one.size(), many.size());
      for (size_t p = 0; p < one.size(); ++p) {
        ASSERT_EQ(one[p].data.size(), many[p].data.size());
        EXPECT_EQ(std::memcmp(one[p].data.data(), many[p].data.data(),
                              one[p].data.size() * sizeof(double)),
                  0)
            << "param " << p << ", " << threads << " threads";
      }
    }
  }
}

TEST(RandomInputs, NormalInputsAreStandardNormalAndF32Rounded) {
  // 1.2e6 elements: several of the generator's 65536-element chunks.
  const auto g = graph_of(
      "DIMS = dict(M=1000, N=1200)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return x * 2.0\n");
  const auto in = v::make_inputs(g, 12345, v::Distribution::Normal)[0].data;
  double s1 = 0, s2 = 0;
  for (double x : in) {
    ASSERT_EQ(x, static_cast<double>(static_cast<float>(x)));
    s1 += x, s2 += x * x;
  }
  const double n = static_cast<double>(in.size()), mean = s1 / n;
  EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(s2 / n - mean * mean, 1.0, 5 * std::sqrt(2.0 / n));
  // Offset: the same normal shifted by 100; Wide: 30 times wider.
  const auto offset = v::make_inputs(g, 12345, v::Distribution::Offset)[0].data;
  const auto wide = v::make_inputs(g, 12345, v::Distribution::Wide)[0].data;
  double o1 = 0, w2 = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    o1 += offset[k];
    w2 += wide[k] * wide[k];
  }
  EXPECT_NEAR(o1 / n, 100.0, 5 / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(w2 / n), 30.0, 30 * 5 * std::sqrt(0.5 / n));
}

// Subnormal: the largest float parameter at its dtype's smallest normal (most of it
// subnormal in that dtype, every value of it rounded to it), the others as Normal draws.
TEST(RandomInputs, SubnormalInputsAreTinyInTheLargestParameterOnly) {
  const auto g = graph_of(
      "import ml_dtypes\n"
      "DIMS = dict(M=64, K=96, N=32)\n"
      "def f(a: \"bf16[M, K]\", b: \"bf16[K, N]\", h: \"f16[M, K]\", x: \"f32[N]\") -> \"f32[M, "
      "N]\":\n"
      "    return (a.astype(np.float32) + h.astype(np.float32)) @ b.astype(np.float32) + x\n");
  const auto in = v::make_inputs(g, 5, v::Distribution::Subnormal);
  const auto normal = v::make_inputs(g, 5, v::Distribution::Normal);
  ASSERT_EQ(in.size(), 4u);
  size_t subnormal = 0;
  for (double x : in[0].data) {
    EXPECT_LT(std::fabs(x), 0x1p-120);
    EXPECT_EQ(x, static_cast<double>(ollie_half::round_bf16(x)));
    subnormal += x != 0 && std::fabs(x) < 0x1p-126;
  }
  EXPECT_GT(subnormal, in[0].data.size() / 2);  // about 68%
  for (size_t p = 1; p < in.size(); ++p) EXPECT_EQ(in[p].data, normal[p].data) << p;
  // One float16 parameter: drawn at 2^-14, so mostly float16 subnormals.
  const auto h = graph_of(
      "DIMS = dict(T=64, D=64)\n"
      "def f(x: \"f16[T, D]\", w: \"f32[D]\") -> \"f32[T, D]\":\n"
      "    return x.astype(np.float32) * w\n");
  const auto tiny = v::make_inputs(h, 6, v::Distribution::Subnormal)[0].data;
  subnormal = 0;
  for (double x : tiny) subnormal += x != 0 && std::fabs(x) < 0x1p-14;
  EXPECT_GT(subnormal, tiny.size() / 2);
}

TEST(RandomInputs, AboutOnePercentSpecialValuesOfEachKind) {
  const auto g = graph_of(
      "DIMS = dict(M=1000, N=1000)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return x * 2.0\n");
  const auto in = v::make_inputs(g, 777, v::Distribution::Special)[0].data;
  int nan = 0, pinf = 0, ninf = 0, pzero = 0, nzero = 0;
  for (double x : in) {
    nan += std::isnan(x);
    pinf += x == INFINITY;
    ninf += x == -INFINITY;
    pzero += x == 0 && !std::signbit(x);
    nzero += x == 0 && std::signbit(x);
  }
  const double n = static_cast<double>(in.size());
  const int special = nan + pinf + ninf + pzero + nzero;
  EXPECT_NEAR(special / n, 0.01, 5 * std::sqrt(0.01 * 0.99 / n));
  // Each kind a fifth of them (a normal draw is never exactly zero).
  for (int count : {nan, pinf, ninf, pzero, nzero})
    EXPECT_NEAR(count, n / 500, 5 * std::sqrt(n / 500));
}

TEST(RandomInputs, IntegersCoverTheirRangeUniformly) {
  const auto g = graph_of(
      "DIMS = dict(M=600, K=40, N=500)\n"
      "def f(a: \"f32[M, K]\", b: \"f32[K, N]\", i: \"i32[N]\", m: \"bool[N]\") -> \"f32[M, N]\":\n"
      "    return np.where(m, a @ b, i.astype(np.float32))\n");
  const int64_t k = v::exact_range(g).k;
  ASSERT_GT(k, 8);
  const auto in = v::make_inputs(g, 5, v::Distribution::Integer);
  std::map<double, int> counts;
  for (size_t p : {size_t{0}, size_t{1}})
    for (double x : in[p].data) ++counts[x];
  EXPECT_EQ(counts.size(), static_cast<size_t>(2 * k + 1));  // every value, from -k to k
  EXPECT_EQ(counts.begin()->first, static_cast<double>(-k));
  EXPECT_EQ(counts.rbegin()->first, static_cast<double>(k));
  // Integer params: -8..8; bools: fair coins.
  std::map<double, int> small;
  for (double x : in[2].data) ++small[x];
  EXPECT_EQ(small.size(), 17u);
  EXPECT_EQ(small.begin()->first, -8.0);
  EXPECT_EQ(small.rbegin()->first, 8.0);
  int ones = 0;
  for (double x : in[3].data) {
    ASSERT_TRUE(x == 0.0 || x == 1.0);
    ones += x == 1.0;
  }
  EXPECT_NEAR(ones, 250, 5 * std::sqrt(500) / 2);
}

}  // namespace
