// float16 and bfloat16 in specs (issue 20): annotations, np.float16 and ml_dtypes.bfloat16
// (the spec still runs under numpy), astype both ways, numpy 2 / ml_dtypes promotion, and
// clear errors for what is not supported.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "ir/ir.h"
#include "spec_test_util.h"

namespace ollie::spec {
namespace {

using namespace spec_tests;

using ir::DType;
using ir::OpKind;

std::string spec(const std::string& body) {
  return "import numpy as np\nimport ml_dtypes\nDIMS = dict(M=4, N=8)\n" + body;
}

TEST(HalfDtypes, AnnotationsNameBothTypes) {
  auto g = compile(spec(
      "def f(a: \"f16[M]\", b: \"bf16[M]\", c: \"float16[M]\", d: \"bfloat16[M]\") -> \"f16[M]\":\n"
      "    return a\n"));
  ASSERT_EQ(g.params.size(), 4u);
  EXPECT_EQ(g.params[0].dtype, DType::F16);
  EXPECT_EQ(g.params[1].dtype, DType::BF16);
  EXPECT_EQ(g.params[2].dtype, DType::F16);
  EXPECT_EQ(g.params[3].dtype, DType::BF16);
  EXPECT_EQ(out_type(g), "f16[M]");
}

// The deployed form: low-precision in, float32 arithmetic after an explicit astype,
// low-precision out; every spelling of the two dtypes numpy and ml_dtypes accept.
TEST(HalfDtypes, AstypeToAndFromEverySpelling) {
  auto g = compile(
      spec("def f(x: \"bf16[M, N]\", y: \"f16[M, N]\") -> (\"bf16[M, N]\", \"f16[M, N]\", "
           "\"bf16[M, N]\", \"f16[M, N]\"):\n"
           "    s = x.astype(np.float32) + y.astype(np.float32)\n"
           "    return (s.astype(ml_dtypes.bfloat16), s.astype(np.float16), s.astype('bfloat16'),\n"
           "            s.astype(np.half))\n"));
  for (size_t i = 0; i < 4; ++i) {
    const ir::Node& out = g.node(g.outputs[i]);
    EXPECT_EQ(out.kind, OpKind::Convert) << i;
    EXPECT_EQ(g.node(out.operands[0]).dtype, DType::F32) << i;
    EXPECT_FALSE(out.weak) << i;
  }
  EXPECT_EQ(out_type(g, 0), "bf16[M, N]");
  EXPECT_EQ(out_type(g, 1), "f16[M, N]");
}

TEST(HalfDtypes, FromImportsWork) {
  auto g = compile(
      "import numpy as np\nfrom ml_dtypes import bfloat16\nfrom numpy import float16\n"
      "DIMS = dict(M=4)\n"
      "def f(x: \"f32[M]\") -> (\"bf16[M]\", \"f16[M]\"):\n"
      "    return x.astype(bfloat16), x.astype(float16)\n");
  EXPECT_EQ(out_type(g, 0), "bf16[M]");
  EXPECT_EQ(out_type(g, 1), "f16[M]");
}

// numpy 2 with ml_dtypes: f16/bf16 with f32 -> f32, with each other -> f32, with f64 ->
// f64, with an int32 array -> f64, with a bool array or a Python scalar -> itself.
TEST(HalfDtypes, PromotionFollowsNumpyAndMlDtypes) {
  auto g = compile(
      spec("def f(h: \"f16[M]\", b: \"bf16[M]\", s: \"f32[M]\", d: \"f64[M]\", i: \"i32[M]\",\n"
           "      m: \"bool[M]\") -> (\"f32[M]\", \"f32[M]\", \"f32[M]\", \"f64[M]\", \"f64[M]\",\n"
           "      \"f64[M]\", \"bf16[M]\", \"f16[M]\", \"bf16[M]\", \"f16[M]\", \"bf16[M]\"):\n"
           "    return (h + s, b * s, h + b, b + d, h + i, b - i, b + 1.5, h * 2, b + m,\n"
           "            h - h, b / b)\n"));
  const char* want[] = {"f32[M]",  "f32[M]", "f32[M]",  "f64[M]", "f64[M]", "f64[M]",
                        "bf16[M]", "f16[M]", "bf16[M]", "f16[M]", "bf16[M]"};
  for (size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(out_type(g, i), want[i]) << i;
  // bf16 + 1.5: the Python float is weak and takes bf16 (exact value kept in the reference).
  const ir::Node& add = g.node(g.outputs[6]);
  EXPECT_EQ(add.kind, OpKind::Add);
}

TEST(HalfDtypes, ScalarCastsRoundTheLiteral) {
  auto g =
      compile(spec("def f(x: \"f16[M]\", y: \"bf16[M]\") -> (\"f16[M]\", \"bf16[M]\"):\n"
                   "    return x * np.float16(0.1), y * ml_dtypes.bfloat16(0.1)\n"));
  std::vector<double> consts;
  for (const auto& n : g.nodes)
    if (n.kind == OpKind::Const) consts.push_back(n.const_value);
  EXPECT_NE(std::find(consts.begin(), consts.end(), 0x1.998p-4), consts.end());  // f16(0.1)
  EXPECT_NE(std::find(consts.begin(), consts.end(), 0x1.9ap-4), consts.end());   // bf16(0.1)
}

TEST(HalfDtypes, ErrorsSayWhatToDo) {
  Err e = error_of(spec("def f(x: \"f8[M]\") -> \"f8[M]\":\n    return x\n"));
  EXPECT_HAS(e.message, "unknown dtype 'f8'");
  EXPECT_HAS(e.hint, "f16, bf16");
  e =
      error_of(spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n"
                    "    return x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)\n"));
  EXPECT_HAS(e.message, "ml_dtypes.float8_e4m3fn is not supported");
  EXPECT_HAS(e.hint, "bfloat16");
  e = error_of(spec("def f(x: \"bf16[M]\") -> \"bf16[M]\":\n    return x.astype(np.float32)\n"));
  EXPECT_HAS(e.message, "returns f32[M] but the annotation says bf16[M]");
  EXPECT_HAS(e.hint, "astype(ml_dtypes.bfloat16)");
  e = error_of(
      "import numpy as np\nimport jax\nDIMS = dict(M=4)\n"
      "def f(x: \"f32[M]\") -> \"f32[M]\":\n    return x\n");
  EXPECT_HAS(e.hint, "ml_dtypes");
}

}  // namespace
}  // namespace ollie::spec
