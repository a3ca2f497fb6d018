// Accuracy of the kernel math functions (src/emit/kernel_math.h): every result within
// 2 ulps of the correctly rounded value (float against double std:: functions, double
// against long double ones) on ~1e6 sampled inputs per function plus edge cases, and
// exact special values. The exhaustive float sweep is too slow for CI and was run by
// hand (maxima quoted in the header).
#include "emit/kernel_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr double kMaxUlps = 2.0;
constexpr int kSamples = 1'000'000;

template <class T>
using lim = std::numeric_limits<T>;

// Error of y in ulps of the result format at the reference value; below the normal
// range the ulp is the subnormal spacing, so this is also the absolute-error rule.
// Infinite or NaN results must match exactly (inf when the reference rounds to inf).
template <class T, class R>
double ulp_error(T y, R ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0.0 : lim<double>::infinity();
  if (std::isnan(y)) return lim<double>::infinity();
  const T rounded = static_cast<T>(ref);
  if (std::isinf(rounded) || std::isinf(y)) return y == rounded ? 0.0 : lim<double>::infinity();
  const int e =
      std::max(ref == 0 ? lim<T>::min_exponent - 1 : std::ilogb(ref), lim<T>::min_exponent - 1);
  const R ulp = std::ldexp(R(1), e - (lim<T>::digits - 1));
  return static_cast<double>(std::fabs(static_cast<R>(y) - ref) / ulp);
}

struct Worst {
  double ulps = 0;
  double x = 0;
  void add(double err, double at) {
    if (err > ulps || std::isnan(err)) ulps = err, x = at;
  }
};

float float_from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// Inputs: every edge case, then random bit patterns (all exponents), then uniform
// draws over [lo, hi] (the interesting range), then log-uniform magnitudes.
template <class T>
std::vector<T> inputs(std::vector<T> edges, double lo, double hi, unsigned seed) {
  std::vector<T> xs = edges;
  for (T e : edges)
    for (int k = 1; k <= 3; ++k) {
      xs.push_back(std::nextafter(e, lim<T>::infinity()));
      xs.push_back(std::nextafter(e, -lim<T>::infinity()));
      e = xs.back();
    }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int max_exp = lim<T>::max_exponent, min_exp = lim<T>::min_exponent - lim<T>::digits;
  while (xs.size() < static_cast<size_t>(kSamples)) {
    switch (xs.size() % 3) {
      case 0:
        if constexpr (sizeof(T) == 4) {
          xs.push_back(float_from_bits(static_cast<uint32_t>(rng())));
        } else {
          const uint64_t b = rng();
          double d;
          std::memcpy(&d, &b, sizeof d);
          xs.push_back(d);
        }
        break;
      case 1: xs.push_back(static_cast<T>(lo + (hi - lo) * unit(rng))); break;
      default: {
        const double m = std::exp2(min_exp + (max_exp - min_exp) * unit(rng));
        xs.push_back(static_cast<T>(unit(rng) < 0.5 ? -m : m));
      }
    }
  }
  return xs;
}

template <class T, class F, class Ref>
void expect_within_bound(const char* name, const std::vector<T>& xs, F f, Ref ref) {
  Worst w;
  for (T x : xs) w.add(ulp_error(f(x), ref(x)), static_cast<double>(x));
  EXPECT_LE(w.ulps, kMaxUlps) << name << " worst at x = " << std::hexfloat << w.x;
  std::printf("  %-11s max error %.3f ulp over %zu inputs\n", name, w.ulps, xs.size());
}

// Edge cases shared by the functions: zeros, extremes, subnormals, infinities, NaN.
template <class T>
std::vector<T> common_edges() {
  return {T(0),
          -T(0),
          lim<T>::denorm_min(),
          -lim<T>::denorm_min(),
          lim<T>::min(),
          -lim<T>::min(),
          lim<T>::max(),
          -lim<T>::max(),
          lim<T>::infinity(),
          -lim<T>::infinity(),
          lim<T>::quiet_NaN(),
          T(1),
          T(-1),
          T(0.5),
          T(-0.5),
          T(2),
          T(-2),
          T(1e-30),
          T(-1e-30)};
}

template <class T>
std::vector<T> with(std::vector<T> v, std::initializer_list<T> more) {
  v.insert(v.end(), more);
  return v;
}

// ---- float: sampled bounds against the double functions ---------------------------

TEST(KernelMath, ExpFloatWithinTwoUlps) {
  // Overflow starts at 88.7228, subnormal results at -87.3365, zero at -103.972.
  const auto xs = inputs<float>(
      with(common_edges<float>(), {88.72283f, 88.72284f, 89.0f, -87.33654f, -87.33655f, -103.97207f,
                                   -103.97208f, -104.0f, 0.34657359f, -0.34657359f, 10.0f, -10.0f}),
      -110.0, 95.0, 1);
  expect_within_bound(
      "exp(float)", xs, [](float x) { return ollie_math::exp(x); },
      [](float x) { return std::exp(static_cast<double>(x)); });
}

TEST(KernelMath, Exp2FloatWithinTwoUlpsAndExactOnIntegers) {
  // Overflow from 128, subnormal results below -126, zero below -150.
  const auto xs = inputs<float>(
      with(common_edges<float>(), {127.99999f, 128.0f, -126.0f, -126.00001f, -149.0f, -149.99998f,
                                   -150.0f, -151.0f, 0.5f, -0.5f, 10.0f}),
      -160.0, 135.0, 11);
  expect_within_bound(
      "exp2(float)", xs, [](float x) { return ollie_math::exp2(x); },
      [](float x) { return std::exp2(static_cast<double>(x)); });
  for (int n = -149; n <= 127; ++n)
    EXPECT_EQ(ollie_math::exp2(static_cast<float>(n)), std::ldexp(1.0f, n)) << n;
}

TEST(KernelMath, TanhFloatWithinTwoUlps) {
  const auto xs = inputs<float>(
      with(common_edges<float>(), {0.625f, -0.625f, 9.0f, 9.1f, -9.1f, 1e-4f}), -10.0, 10.0, 2);
  expect_within_bound(
      "tanh(float)", xs, [](float x) { return ollie_math::tanh(x); },
      [](float x) { return std::tanh(static_cast<double>(x)); });
}

TEST(KernelMath, LogFloatWithinTwoUlps) {
  const auto xs = inputs<float>(
      with(common_edges<float>(),
           {0.70710677f, 1.4142135f, 0.99999994f, 1.0000001f, 2.7182817f, 0x1p-127f, 0x1p100f}),
      0.0, 4.0, 3);
  expect_within_bound(
      "log(float)", xs, [](float x) { return ollie_math::log(x); },
      [](float x) { return std::log(static_cast<double>(x)); });
}

TEST(KernelMath, ErfFloatWithinTwoUlps) {
  const auto xs = inputs<float>(
      with(common_edges<float>(), {1.0f, -1.0f, 3.9f, 4.0f, -4.0f, 0.984647f}), -5.0, 5.0, 4);
  expect_within_bound(
      "erf(float)", xs, [](float x) { return ollie_math::erf(x); },
      [](float x) { return std::erf(static_cast<double>(x)); });
}

// ---- double: sampled bounds against the long double functions ---------------------

TEST(KernelMath, ExpDoubleWithinTwoUlps) {
  // Overflow starts at 709.7827, subnormal results at -708.3964, zero at -745.1332.
  const auto xs =
      inputs<double>(with(common_edges<double>(),
                          {709.782712893384, 709.7827128933841, 710.0, -708.3964185322641,
                           -745.1332191019411, -745.1332191019412, -746.0, 0.34657359027997264}),
                     -750.0, 715.0, 5);
  expect_within_bound(
      "exp(double)", xs, [](double x) { return ollie_math::exp(x); },
      [](double x) { return std::exp(static_cast<long double>(x)); });
}

TEST(KernelMath, Exp2DoubleWithinTwoUlps) {
  const auto xs =
      inputs<double>(with(common_edges<double>(), {1023.9999999999999, 1024.0, -1022.0, -1074.0,
                                                   -1074.9999999999998, -1075.0, -1076.0, 0.5}),
                     -1080.0, 1030.0, 12);
  expect_within_bound(
      "exp2(double)", xs, [](double x) { return ollie_math::exp2(x); },
      [](double x) { return std::exp2(static_cast<long double>(x)); });
  for (int n = -1074; n <= 1023; n += 7)
    EXPECT_EQ(ollie_math::exp2(static_cast<double>(n)), std::ldexp(1.0, n)) << n;
}

TEST(KernelMath, TanhDoubleWithinTwoUlps) {
  const auto xs = inputs<double>(
      with(common_edges<double>(), {0.625, -0.625, 19.0, 19.1, -19.1, 1e-8}), -20.0, 20.0, 6);
  expect_within_bound(
      "tanh(double)", xs, [](double x) { return ollie_math::tanh(x); },
      [](double x) { return std::tanh(static_cast<long double>(x)); });
}

TEST(KernelMath, LogDoubleWithinTwoUlps) {
  const auto xs = inputs<double>(
      with(common_edges<double>(), {0.7071067811865476, 1.4142135623730951, 0.9999999999999999,
                                    1.0000000000000002, 2.718281828459045, 0x1p-1023, 0x1p1000}),
      0.0, 4.0, 7);
  expect_within_bound(
      "log(double)", xs, [](double x) { return ollie_math::log(x); },
      [](double x) { return std::log(static_cast<long double>(x)); });
}

// ---- special values, exactly --------------------------------------------------------

template <class T>
void expect_specials() {
  const T inf = lim<T>::infinity(), nan = lim<T>::quiet_NaN();
  SCOPED_TRACE(sizeof(T) == 4 ? "float" : "double");
  EXPECT_TRUE(std::isnan(ollie_math::exp(nan)));
  EXPECT_EQ(ollie_math::exp(inf), inf);
  EXPECT_EQ(ollie_math::exp(-inf), T(0));
  EXPECT_EQ(ollie_math::exp(T(0)), T(1));
  EXPECT_EQ(ollie_math::exp(-T(0)), T(1));
  EXPECT_EQ(ollie_math::exp(T(1000)), inf);  // overflow
  EXPECT_EQ(ollie_math::exp(lim<T>::max()), inf);
  EXPECT_EQ(ollie_math::exp(T(-1000)), T(0));  // underflow
  EXPECT_FALSE(std::signbit(ollie_math::exp(T(-1000))));
  EXPECT_EQ(ollie_math::exp(-lim<T>::max()), T(0));
  EXPECT_EQ(ollie_math::exp(lim<T>::denorm_min()), T(1));
  // The smallest subnormal result: exp(x) just above half of it rounds up to it.
  const T tiny = std::log(lim<T>::denorm_min()) + T(0.1);
  const T got = ollie_math::exp(tiny);
  EXPECT_GT(got, T(0));
  EXPECT_LT(got, T(4) * lim<T>::denorm_min());

  EXPECT_TRUE(std::isnan(ollie_math::exp2(nan)));
  EXPECT_EQ(ollie_math::exp2(inf), inf);
  EXPECT_EQ(ollie_math::exp2(-inf), T(0));
  EXPECT_EQ(ollie_math::exp2(T(0)), T(1));
  EXPECT_EQ(ollie_math::exp2(-lim<T>::max()), T(0));
  EXPECT_EQ(ollie_math::exp2(lim<T>::max()), inf);

  EXPECT_TRUE(std::isnan(ollie_math::tanh(nan)));
  EXPECT_EQ(ollie_math::tanh(inf), T(1));
  EXPECT_EQ(ollie_math::tanh(-inf), T(-1));
  EXPECT_EQ(ollie_math::tanh(T(50)), T(1));
  EXPECT_EQ(ollie_math::tanh(T(-50)), T(-1));
  EXPECT_EQ(ollie_math::tanh(T(0)), T(0));
  EXPECT_FALSE(std::signbit(ollie_math::tanh(T(0))));
  EXPECT_TRUE(std::signbit(ollie_math::tanh(-T(0))));
  EXPECT_EQ(ollie_math::tanh(lim<T>::denorm_min()), lim<T>::denorm_min());
  EXPECT_EQ(ollie_math::tanh(-lim<T>::min()), -lim<T>::min());
  const T small = T(1e-20);
  EXPECT_EQ(ollie_math::tanh(small), small);  // relative accuracy near 0

  EXPECT_TRUE(std::isnan(ollie_math::log(nan)));
  EXPECT_TRUE(std::isnan(ollie_math::log(T(-1))));
  EXPECT_TRUE(std::isnan(ollie_math::log(-inf)));
  EXPECT_TRUE(std::isnan(ollie_math::log(-lim<T>::denorm_min())));
  EXPECT_EQ(ollie_math::log(T(0)), -inf);
  EXPECT_EQ(ollie_math::log(-T(0)), -inf);
  EXPECT_EQ(ollie_math::log(inf), inf);
  EXPECT_EQ(ollie_math::log(T(1)), T(0));
  EXPECT_FALSE(std::signbit(ollie_math::log(T(1))));
  EXPECT_LE(ulp_error(ollie_math::log(lim<T>::denorm_min()),
                      std::log(static_cast<long double>(lim<T>::denorm_min()))),
            kMaxUlps);
  EXPECT_LE(
      ulp_error(ollie_math::log(lim<T>::max()), std::log(static_cast<long double>(lim<T>::max()))),
      kMaxUlps);
}

TEST(KernelMath, SpecialValuesFloat) {
  expect_specials<float>();
  const float inf = lim<float>::infinity();
  EXPECT_TRUE(std::isnan(ollie_math::erf(lim<float>::quiet_NaN())));
  EXPECT_EQ(ollie_math::erf(inf), 1.0f);
  EXPECT_EQ(ollie_math::erf(-inf), -1.0f);
  EXPECT_EQ(ollie_math::erf(5.0f), 1.0f);
  EXPECT_EQ(ollie_math::erf(-5.0f), -1.0f);
  EXPECT_EQ(ollie_math::erf(0.0f), 0.0f);
  EXPECT_FALSE(std::signbit(ollie_math::erf(0.0f)));
  EXPECT_TRUE(std::signbit(ollie_math::erf(-0.0f)));
  // Tiny arguments: erf(x) = 2x/sqrt(pi), correctly rounded.
  for (float x : {1e-30f, -1e-20f, 0x1p-126f, 3e-10f})
    EXPECT_EQ(ollie_math::erf(x), static_cast<float>(1.1283791670955126 * x)) << x;
}

TEST(KernelMath, SpecialValuesDouble) { expect_specials<double>(); }

// A dense sweep of float exp and tanh around the places where the method changes
// (reduction boundaries, branch thresholds, subnormal results): every float in each
// window.
TEST(KernelMath, FloatWindowsExhaustive) {
  struct Window {
    const char* name;
    float lo;
    int count;
  };
  const Window windows[] = {
      {"exp", -87.4f, 200000}, {"exp", -103.98f, 200000}, {"exp", 88.7f, 100000},
      {"exp", 0.34f, 200000},  {"tanh", 0.62f, 200000},   {"tanh", 1e-3f, 200000},
      {"erf", 0.99f, 200000},  {"log", 0.7071f, 200000},  {"log", 0.9999f, 200000}};
  for (const auto& w : windows) {
    Worst worst;
    float x = w.lo;
    const std::string fn = w.name;
    for (int i = 0; i < w.count; ++i, x = std::nextafter(x, lim<float>::infinity())) {
      const double xd = x;
      if (fn == "exp") worst.add(ulp_error(ollie_math::exp(x), std::exp(xd)), xd);
      if (fn == "tanh") worst.add(ulp_error(ollie_math::tanh(x), std::tanh(xd)), xd);
      if (fn == "erf") worst.add(ulp_error(ollie_math::erf(x), std::erf(xd)), xd);
      if (fn == "log") worst.add(ulp_error(ollie_math::log(x), std::log(xd)), xd);
    }
    EXPECT_LE(worst.ulps, kMaxUlps)
        << fn << " from " << w.lo << ", worst at " << std::hexfloat << worst.x;
  }
}

}  // namespace
