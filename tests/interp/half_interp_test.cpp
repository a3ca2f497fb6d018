// The reference on float16 and bfloat16 (issue 20): conversions round exactly as numpy and
// ml_dtypes do (ties to even, f16 overflow to inf past 65504, subnormals, NaN), inputs are
// rounded to their dtype, arithmetic in a 16-bit dtype is bounded by its unit roundoff, and
// an overflow certain at a 16-bit output is the special value inf with bound 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_graph.h"

namespace ollie::interp {
namespace {

using ir::DType;
using ir::OpKind;
using testing::S;
using testing::T;
using testing::TestGraph;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Converts `values` (exact in `from`) to `to` through one Convert; returns values and bounds.
Result convert(DType from, DType to, const std::vector<double>& values) {
  TestGraph tg;
  const auto n = static_cast<int64_t>(values.size());
  tg.out(tg.b.convert(tg.in("x", from, S({n})), to));
  return tg.run({T(from, {n}, values)});
}

void expect_values(const Result& r, const std::vector<double>& want) {
  ASSERT_EQ(r.values[0].data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(r.values[0].data[i])) << i;
    else
      EXPECT_EQ(r.values[0].data[i], want[i]) << i << ": " << r.values[0].data[i];
  }
}

TEST(HalfReference, F32ToF16RoundsToNearestEvenOverflowsAndKeepsSubnormals) {
  const Result r = convert(DType::F32, DType::F16,
                           {1 + 0x1p-11, 1 + 3 * 0x1p-11, 65519.0, 65520.0, -70000.0, 1.5 * 0x1p-24,
                            0x1p-26, 0x1p-25, std::nan("")});
  expect_values(r, {1.0, 1 + 0x1p-9, 65504.0, kInf, -kInf, 0x1p-23, 0.0, 0.0, std::nan("")});
  // An exact operand rounds exactly as numpy does: no bound.
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(r.bounds[0].data[i], 0.0) << i;
}

TEST(HalfReference, F32ToBf16RoundsToNearestEvenAndOverflows) {
  const Result r = convert(DType::F32, DType::BF16,
                           {1 + 0x1p-8, 1 + 3 * 0x1p-8, static_cast<double>(3.4028234663852886e38),
                            -0x1p-133 * 1.5, std::nan("")});
  expect_values(r, {1.0, 1 + 0x1p-6, kInf, -0x1p-132, std::nan("")});
  for (size_t i : {0, 1, 2}) EXPECT_EQ(r.bounds[0].data[i], 0.0) << i;
}

// numpy rounds float64 to float16 once; ml_dtypes rounds float64 to bfloat16 through
// float32 (twice), and the reference does the same.
TEST(HalfReference, F64ConversionsRoundOnceForF16AndThroughF32ForBf16) {
  expect_values(convert(DType::F64, DType::F16, {1 + 0x1p-11 + 0x1p-40}), {1 + 0x1p-10});
  expect_values(convert(DType::F64, DType::BF16, {1 + 0x1p-8 + 0x1p-30}), {1.0});
}

TEST(HalfReference, InputsAreRoundedToTheirDtype) {
  TestGraph tg;
  tg.out(tg.b.unary(OpKind::Neg, tg.in("h", DType::F16, S({2}))));
  tg.out(tg.b.unary(OpKind::Neg, tg.in("b", DType::BF16, S({2}))));
  const Result r = tg.run({T(DType::F16, {2}, {0.1, 1e5}), T(DType::BF16, {2}, {0.1, 1e5})});
  EXPECT_EQ(r.values[0].data[0], -0x1.998p-4);
  EXPECT_EQ(r.values[0].data[1], -kInf);
  EXPECT_EQ(r.values[1].data[0], -0x1.9ap-4);
  EXPECT_EQ(r.values[1].data[1], -99840.0);  // 1e5 in bfloat16
}

// Arithmetic in a 16-bit dtype: exact value, bound of one rounding in that dtype.
TEST(HalfReference, ArithmeticInF16AndBf16IsBoundedByTheirUnitRoundoff) {
  for (DType t : {DType::F16, DType::BF16}) {
    TestGraph tg;
    tg.out(tg.b.binary(OpKind::Mul, tg.in("a", t, S({1})), tg.in("b", t, S({1}))));
    const Result r = tg.run({T(t, {1}, {3.0}), T(t, {1}, {1.25})});
    EXPECT_EQ(r.values[0].data[0], 3.75);
    const double u = ir::unit_roundoff(t);
    EXPECT_GE(r.bounds[0].data[0], u * 3.75) << ir::dtype_name(t);
    EXPECT_LE(r.bounds[0].data[0], 1.01 * u * 3.75 + ir::smallest_normal(t)) << ir::dtype_name(t);
  }
  EXPECT_EQ(ir::unit_roundoff(DType::F16), 0x1p-11);
  EXPECT_EQ(ir::unit_roundoff(DType::BF16), 0x1p-8);
  EXPECT_EQ(ir::largest_finite(DType::F16), 65504.0);
  EXPECT_EQ(ir::largest_finite(DType::BF16), 0x1.fep127);
}

// A float16 product past 65520 is inf in every implementation that stores it: the special
// value with bound 0, not an unbounded element. One that may round either way stays
// unbounded (saturated).
TEST(HalfReference, F16OverflowAtAnOutputIsInfWithBoundZero) {
  TestGraph tg;
  tg.out(tg.b.binary(OpKind::Mul, tg.in("a", DType::F16, S({3})), tg.in("b", DType::F16, S({3}))));
  const Result r = tg.run(
      {T(DType::F16, {3}, {300.0, -300.0, 255.875}), T(DType::F16, {3}, {300.0, 300.0, 256.0})});
  EXPECT_EQ(r.values[0].data[0], kInf);
  EXPECT_EQ(r.bounds[0].data[0], 0.0);
  EXPECT_EQ(r.values[0].data[1], -kInf);
  EXPECT_EQ(r.bounds[0].data[1], 0.0);
  // 255.875 * 256 = 65504: exact and finite, bound within one rounding.
  EXPECT_EQ(r.values[0].data[2], 65504.0);
  EXPECT_TRUE(std::isinf(r.bounds[0].data[2]) || r.bounds[0].data[2] <= 65504.0 * 0x1p-10);
}

}  // namespace
}  // namespace ollie::interp
