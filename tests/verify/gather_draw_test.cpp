// Tests of the verifier's index inputs (docs/verifier.md, "Index inputs"): a gather's index
// array is drawn inside [-V, V) at every dims, every distribution, with -V, -1, 0 and
// V - 1 in every run of 8 ids; the integer-exact suite admits gathers.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "spec/spec.h"
#include "verify/polynomial.h"
#include "verify/verify.h"

namespace {

namespace v = ollie::verify;

ollie::ir::Graph embedding(const ollie::ir::DimBindings& dims) {
  ollie::spec::SpecOptions o;
  o.dim_overrides = dims;
  return ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/embedding.py", o);
}

TEST(GatherDraw, IndicesLieInsideMinusVToVAndHoldTheEdges) {
  for (int64_t V : {1, 2, 5, 4096}) {
    const auto g = embedding({{"V", V}, {"T", 40}, {"D", 3}, {"P", 40}});
    for (auto d : {v::Distribution::Normal, v::Distribution::Wide, v::Distribution::Special,
                   v::Distribution::Offset, v::Distribution::Constants}) {
      const auto inputs = v::make_inputs(g, 7 + static_cast<uint64_t>(V), d);
      const auto& ids = inputs[0].data;
      ASSERT_EQ(ids.size(), 40u);
      std::set<double> seen(ids.begin(), ids.end());
      for (double i : ids) {
        EXPECT_GE(i, static_cast<double>(-V)) << "V=" << V;
        EXPECT_LT(i, static_cast<double>(V)) << "V=" << V;
        EXPECT_EQ(i, static_cast<double>(static_cast<int64_t>(i)));
      }
      for (double edge : {-static_cast<double>(V), -1.0, 0.0, static_cast<double>(V - 1)})
        EXPECT_TRUE(seen.count(edge)) << "V=" << V << " lacks " << edge;
      EXPECT_LT(seen.size(), ids.size()) << "V=" << V << ": no repeated index";
    }
  }
}

TEST(GatherDraw, GathersArePolynomialAndTheirIndicesSetNoMagnitude) {
  const auto g = ollie::spec::compile_spec(
      "t.py",
      "import numpy as np\nDIMS = dict(T=6, V=50, D=8)\n"
      "def f(ids: \"i64[T]\", w: \"f32[V, D]\", x: \"f32[T, D]\") -> \"f32[T, D]\":\n"
      "    return w[ids] * x + w[ids]\n",
      {});
  EXPECT_EQ(v::polynomial_reason(g), "");
  const v::ExactRange r = v::exact_range(g);
  EXPECT_EQ(r.k, 1024);  // |w x + w| <= 2 k^2 is far below 2^24
  const auto inputs = v::make_inputs(g, 3, v::Distribution::Integer);
  for (double i : inputs[0].data) {
    EXPECT_GE(i, -50);
    EXPECT_LT(i, 50);
  }
}

}  // namespace
