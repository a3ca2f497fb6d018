// Tests of the elaborator: numpy semantics of small specs checked on the built IR
// (shapes, dtypes, op kinds), and located errors (line, column, message, hint) for
// bad specs, bad annotations and bad options.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "spec/spec.h"
#include "spec_test_util.h"

namespace ollie::spec {
namespace {

using namespace spec_tests;

using ir::DType;
using ir::OpKind;

// The source with a standard header (numpy import and DIMS) on lines 1-2.
std::string spec(const std::string& body) {
  return "import numpy as np\nDIMS = dict(M=4, K=6, N=8, B=2, S=3, HD=8)\n" + body;
}

const ir::Node* find(const ir::Graph& g, OpKind k) {
  for (auto& node : g.nodes)
    if (node.kind == k) return &node;
  return nullptr;
}

// ---------------------------------------------------------------------------- positive

TEST(Elaborate, MatmulBiasReluBroadcastsAndKeepsF32) {
  auto g =
      compile(spec("def f(a: \"f32[M, K]\", b: \"f32[K, N]\", bias: \"f32[N]\") -> \"f32[M, N]\":\n"
                   "    return np.maximum(a @ b + bias, 0.0)\n"));
  EXPECT_EQ(g.entry, "f");
  EXPECT_EQ(g.dims, (std::vector<std::string>{"M", "K", "N"}));
  EXPECT_EQ(g.bound_dims.at("K"), 6);
  EXPECT_EQ(g.results.at(0).name, "out0");
  EXPECT_EQ(out_type(g), "f32[M, N]");
  const ir::Node* c = find(g, OpKind::Contract);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->lhs_labels, (std::vector<int>{0, 1}));
  EXPECT_EQ(c->rhs_labels, (std::vector<int>{1, 2}));
  EXPECT_EQ(c->out_labels, (std::vector<int>{0, 2}));
  // bias [N] -> reshape [1, N] -> broadcast [M, N]
  const ir::Node* r = find(g, OpKind::Reshape);
  ASSERT_TRUE(r);
  EXPECT_EQ(ir::shape_str(r->shape), "[1, N]");
  EXPECT_EQ(g.node(g.outputs[0]).kind, OpKind::Max);
  // 0.0 is a weak scalar: an f32 const, no Convert anywhere.
  EXPECT_EQ(count(g, OpKind::Convert), 0);
}

TEST(Elaborate, PromotionNep50) {
  auto g =
      compile(spec("def f(x: \"f32[M]\", y: \"f64[M]\", i: \"i32[M]\") -> (\"f32[M]\", \"f64[M]\", "
                   "\"f64[M]\", \"f64[M]\", \"i32[M]\", \"f32[M]\"):\n"
                   "    return x * 0.5, x + y, i * 1.5, i / i, i + 1, x * np.float32(3.0)\n"));
  EXPECT_EQ(out_type(g, 0), "f32[M]");
  const ir::Node& half = g.node(g.node(g.node(g.outputs[0]).operands[1]).operands[0]);
  EXPECT_EQ(half.kind, OpKind::Reshape);
  EXPECT_EQ(out_type(g, 1), "f64[M]");
  EXPECT_EQ(g.node(g.node(g.outputs[1]).operands[0]).kind, OpKind::Convert);
  EXPECT_EQ(out_type(g, 2), "f64[M]");
  EXPECT_EQ(out_type(g, 3), "f64[M]");
  EXPECT_EQ(g.node(g.outputs[3]).kind, OpKind::Div);
  EXPECT_EQ(out_type(g, 4), "i32[M]");
  EXPECT_EQ(out_type(g, 5), "f32[M]");
}

TEST(Elaborate, WeakScalarConstHoldsExactDouble) {
  auto g = compile(spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return x * 0.1\n"));
  const ir::Node* c = find(g, OpKind::Const);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->dtype, DType::F32);
  EXPECT_EQ(c->const_value, 0.1);
}

TEST(Elaborate, ScalarOnTheLeftSigmoid) {
  auto g =
      compile(spec("def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return 1 / (1 + np.exp(-x))\n"));
  EXPECT_EQ(out_type(g), "f32[M, N]");
  EXPECT_EQ(count(g, OpKind::Exp), 1);
  EXPECT_EQ(count(g, OpKind::Neg), 1);
  EXPECT_EQ(count(g, OpKind::Convert), 0);
}

TEST(Elaborate, ArangeOverDimIsF64) {
  auto g =
      compile(spec("def f(x: \"f32[HD]\") -> \"f64[]\":\n"
                   "    HD = x.shape[-1]\n"
                   "    inv = 1.0 / (10000.0 ** (np.arange(0, HD, 2) / HD))\n"
                   "    return (x[:HD//2] * inv).sum()\n"));
  EXPECT_EQ(out_type(g), "f64[]");
  const ir::Node* iota = find(g, OpKind::Iota);
  ASSERT_TRUE(iota);
  EXPECT_EQ(iota->dtype, DType::I64);
  EXPECT_EQ(ir::shape_str(iota->shape), "[(HD//2)]");
  EXPECT_EQ(count(g, OpKind::Pow), 1);
}

TEST(Elaborate, MatmulBatchBroadcast) {
  auto g =
      compile(spec("def f(a: \"f32[B, 1, M, K]\", b: \"f32[S, K, N]\") -> \"f32[B, S, M, N]\":\n   "
                   " return a @ b\n"));
  EXPECT_EQ(out_type(g), "f32[B, S, M, N]");
  const ir::Node* c = find(g, OpKind::Contract);
  ASSERT_TRUE(c);
  EXPECT_EQ(ir::shape_str(g.node(c->operands[0]).shape), "[B, S, M, K]");
  EXPECT_EQ(c->rhs_labels, (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(c->out_labels, (std::vector<int>{0, 1, 2, 4}));
}

TEST(Elaborate, MatmulVector) {
  auto g = compile(
      spec("def f(a: \"f32[M, K]\", v: \"f32[K]\") -> \"f32[M]\":\n    return np.matmul(a, v)\n"));
  EXPECT_EQ(out_type(g), "f32[M]");
}

TEST(Elaborate, EinsumPairwise) {
  auto g =
      compile(spec("def f(a: \"f32[M, K]\", b: \"f32[K, N]\", c: \"f32[N, S]\") -> \"f32[S, M]\":\n"
                   "    return np.einsum(\"ij,jk,kl->li\", a, b, c)\n"));
  EXPECT_EQ(out_type(g), "f32[S, M]");
  EXPECT_EQ(count(g, OpKind::Contract), 2);
  // j is summed in the first contraction: a[ij] b[jk] -> [ik].
  const ir::Node* c = find(g, OpKind::Contract);
  EXPECT_EQ(ir::shape_str(c->shape), "[M, N]");
}

TEST(Elaborate, EinsumSingleOperand) {
  auto g =
      compile(spec("def f(a: \"f32[M, K]\") -> \"f32[K]\":\n    return np.einsum('ij->j', a)\n"));
  EXPECT_EQ(out_type(g), "f32[K]");
  EXPECT_EQ(count(g, OpKind::Reduce), 1);
}

TEST(Elaborate, ReductionsKeepdimsMeanVar) {
  auto g = compile(spec(
      "def f(x: \"f32[M, N]\") -> (\"f32[M, 1]\", \"f32[N]\", \"f32[]\", \"f32[M]\", \"f32[1, "
      "N]\"):\n"
      "    return x.sum(axis=1, keepdims=True), np.max(x, axis=0), x.mean(), np.var(x, axis=-1), "
      "np.min(x, axis=(0,), keepdims=True)\n"));
  EXPECT_EQ(out_type(g, 0), "f32[M, 1]");
  EXPECT_EQ(out_type(g, 1), "f32[N]");
  EXPECT_EQ(out_type(g, 2), "f32[]");
  EXPECT_EQ(out_type(g, 3), "f32[M]");
  EXPECT_EQ(out_type(g, 4), "f32[1, N]");
  // mean divides by a dim const M*N
  bool found = false;
  for (auto& n : g.nodes)
    if (n.kind == OpKind::Const && n.const_dim && n.const_dim->str() == "M*N") found = true;
  EXPECT_TRUE(found);
  EXPECT_EQ(count(g, OpKind::PowI), 1);  // var squares the deviations
}

TEST(Elaborate, VarDdof) {
  auto g =
      compile(spec("def f(x: \"f64[M, N]\") -> \"f64[M]\":\n    return x.var(axis=1, ddof=1)\n"));
  bool found = false;
  for (auto& n : g.nodes)
    if (n.kind == OpKind::Const && n.const_dim && n.const_dim->str() == "N - 1") found = true;
  EXPECT_TRUE(found);
}

TEST(Elaborate, SumOfIntIsI64) {
  auto g = compile(spec("def f(x: \"i32[M, N]\") -> \"i64[M]\":\n    return np.sum(x, axis=-1)\n"));
  EXPECT_EQ(out_type(g), "i64[M]");
}

TEST(Elaborate, ReshapeMinusOneWithHalfDim) {
  auto g =
      compile(spec("def f(x: \"f32[B, S, HD]\") -> \"f32[B, S, 4, 2]\":\n"
                   "    y = x.reshape(x.shape[:-1] + (-1, 2))\n"
                   "    return y[:, :, :4, :]\n"));
  EXPECT_EQ(out_type(g), "f32[B, S, 4, 2]");
  const ir::Node* r = find(g, OpKind::Reshape);
  ASSERT_TRUE(r);
  EXPECT_EQ(ir::shape_str(r->shape), "[B, S, (HD//2), 2]");
  EXPECT_EQ(r->name, "y");
}

TEST(Elaborate, SlicingNegativeIndicesAndSteps) {
  auto g =
      compile(spec("def f(x: \"f32[M, N]\") -> (\"f32[M, 2]\", \"f32[M]\", \"f32[2, N]\", \"f32[1, "
                   "M, 1, N]\"):\n"
                   "    return x[:, -2:], x[:, -1], x[0:4:2, :], x[None, :, np.newaxis]\n"));
  EXPECT_EQ(out_type(g, 0), "f32[M, 2]");
  const ir::Node& s0 = g.node(g.outputs[0]);
  ASSERT_EQ(s0.kind, OpKind::Slice);
  EXPECT_EQ(s0.slices[1].start.str(), "N - 2");
  EXPECT_EQ(s0.slices[1].stop.str(), "N");
  EXPECT_EQ(out_type(g, 1), "f32[M]");
  EXPECT_EQ(out_type(g, 2), "f32[2, N]");
  EXPECT_EQ(out_type(g, 3), "f32[1, M, 1, N]");
}

TEST(Elaborate, SliceClampsLikePython) {
  auto g = compile(spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return x[:100]\n"));
  EXPECT_EQ(out_type(g), "f32[M]");
}

TEST(Elaborate, SplitStackConcat) {
  auto g =
      compile(spec("def f(x: \"f32[M, N]\") -> (\"f32[2, M, 4]\", \"f32[M, N]\", \"f32[M, 2]\"):\n"
                   "    a, b = np.split(x, 2, axis=1)\n"
                   "    p, q, r = np.split(x, [2, 6], axis=-1)\n"
                   "    return np.stack([a, b]), np.concatenate((b, a), axis=1), p\n"));
  EXPECT_EQ(out_type(g, 0), "f32[2, M, 4]");
  EXPECT_EQ(out_type(g, 1), "f32[M, N]");
  EXPECT_EQ(out_type(g, 2), "f32[M, 2]");
  EXPECT_GE(count(g, OpKind::Concat), 2);
}

TEST(Elaborate, RepeatAndTile) {
  auto g =
      compile(spec("def f(x: \"f32[B, S, HD]\") -> (\"f32[B, HD]\", \"f32[B, S]\"):\n"
                   "    r = np.repeat(x, 3, axis=1)\n"
                   "    t = np.tile(x, (1, 1, 2))\n"
                   "    return r.sum(axis=1), t.sum(axis=2)\n"));
  std::string text = ir::to_text(g);
  EXPECT_HAS(text, "f32[B, S, 3, HD] = broadcast");
  EXPECT_HAS(text, "f32[B, 3*S, HD] = reshape");
  EXPECT_HAS(text, "f32[B, S, 2*HD] = reshape");
  EXPECT_GE(count(g, OpKind::Broadcast), 2);
}

TEST(Elaborate, TriAndTriuMask) {
  auto g =
      compile(spec("def f(x: \"f32[S, S]\") -> (\"f32[S, S]\", \"f32[S, S]\"):\n"
                   "    mask = np.tri(x.shape[0], dtype=np.float32)\n"
                   "    return x * mask, np.triu(x, 1)\n"));
  EXPECT_EQ(out_type(g, 0), "f32[S, S]");
  EXPECT_EQ(g.node(g.outputs[1]).kind, OpKind::Select);
  EXPECT_EQ(count(g, OpKind::Iota), 4);
  EXPECT_EQ(count(g, OpKind::Le), 1);
  EXPECT_EQ(count(g, OpKind::Ge), 1);
}

TEST(Elaborate, HelpersWithKwargsDefaultsAndTupleReturn) {
  auto g =
      compile(spec("SCALE = 2.0\n"
                   "def helper(x, y=SCALE, *, shift=1.0):\n"
                   "    return x * y + shift, x\n"
                   "def f(x: \"f64[M]\") -> (\"f64[M]\", \"f64[M]\"):\n"
                   "    a, b = helper(x, shift=3.0)\n"
                   "    c, _ = helper(b, 4.0)\n"
                   "    return a, c\n"));
  EXPECT_EQ(g.entry, "f");
  EXPECT_EQ(count(g, OpKind::Mul), 2);
  bool saw2 = false, saw3 = false, saw4 = false;
  for (auto& n : g.nodes)
    if (n.kind == OpKind::Const) {
      saw2 |= n.const_value == 2.0;
      saw3 |= n.const_value == 3.0;
      saw4 |= n.const_value == 4.0;
    }
  EXPECT_TRUE(saw2 && saw3 && saw4);
}

TEST(Elaborate, DimsOverridesAndOrder) {
  SpecOptions opt;
  opt.dim_overrides = {{"N", 16}};
  auto g = compile(
      spec("def f(b: \"f32[K, N]\", a: \"f32[M, K]\") -> \"f32[M, N]\":\n    return a @ b\n"), opt);
  EXPECT_EQ(g.dims, (std::vector<std::string>{"K", "N", "M"}));
  EXPECT_EQ(g.bound_dims.at("N"), 16);
  EXPECT_EQ(g.bound_dims.at("M"), 4);
}

TEST(Elaborate, DimsFromBraceDictAndEntryOption) {
  SpecOptions opt;
  opt.entry = "g";
  auto g = compile(
      "import numpy as np\nimport math\nDIMS = {\"M\": 3}\n"
      "def f(x: \"f32[M]\") -> \"f32[M]\":\n    return x\n"
      "def g(x: \"f32[M]\") -> \"f32[M]\":\n    return x * math.sqrt(4.0) + np.pi\n",
      opt);
  EXPECT_EQ(g.entry, "g");
  EXPECT_EQ(g.bound_dims.at("M"), 3);
  bool saw2 = false;
  for (auto& n : g.nodes) saw2 |= n.kind == OpKind::Const && n.const_value == 2.0;
  EXPECT_TRUE(saw2);
}

TEST(Elaborate, WhereWithScalarsAndComparisons) {
  auto g =
      compile(spec("def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return np.where((x > 0) & ~(x > "
                   "5), x, 0.0)\n"));
  EXPECT_EQ(g.node(g.outputs[0]).kind, OpKind::Select);
  EXPECT_EQ(count(g, OpKind::Not), 1);
  EXPECT_EQ(count(g, OpKind::And), 1);
  EXPECT_EQ(out_type(g), "f32[M, N]");
}

TEST(Elaborate, TransposeSwapaxesExpandSqueeze) {
  auto g = compile(spec(
      "def f(x: \"f32[B, M, N]\") -> (\"f32[N, M, B]\", \"f32[B, N, M]\", \"f32[B, 1, M, N]\", "
      "\"f32[M, N]\"):\n"
      "    return x.T, np.swapaxes(x, 1, 2), np.expand_dims(x, 1), np.squeeze(x[:1], axis=0)\n"));
  EXPECT_EQ(out_type(g, 0), "f32[N, M, B]");
  EXPECT_EQ(out_type(g, 1), "f32[B, N, M]");
  EXPECT_EQ(out_type(g, 2), "f32[B, 1, M, N]");
  EXPECT_EQ(out_type(g, 3), "f32[M, N]");
}

TEST(Elaborate, AstypeAndSoftmax) {
  auto g = compile(spec(
      "def softmax(x, axis=-1):\n"
      "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
      "    return e / e.sum(axis=axis, keepdims=True)\n"
      "def f(x: \"f64[M, N]\") -> \"f32[M, N]\":\n    return softmax(x).astype(np.float32)\n"));
  EXPECT_EQ(g.node(g.outputs[0]).kind, OpKind::Convert);
  EXPECT_EQ(out_type(g), "f32[M, N]");
  EXPECT_EQ(find(g, OpKind::Exp)->name, "e");
}

TEST(Elaborate, FullZerosOnesLike) {
  auto g =
      compile(spec("def f(x: \"f32[M, N]\") -> (\"f64[M, N]\", \"f32[M, N]\", \"i64[M]\"):\n"
                   "    return np.zeros((x.shape[0], x.shape[1])), np.ones_like(x) + x, "
                   "np.full(x.shape[0], 7)\n"));
  EXPECT_EQ(out_type(g, 0), "f64[M, N]");
  EXPECT_EQ(out_type(g, 1), "f32[M, N]");
  EXPECT_EQ(out_type(g, 2), "i64[M]");
}

TEST(Elaborate, OuterProduct) {
  auto g = compile(
      spec("def f(a: \"f32[M]\", b: \"f32[N]\") -> \"f32[M, N]\":\n    return np.outer(a, b)\n"));
  EXPECT_EQ(out_type(g), "f32[M, N]");
  EXPECT_EQ(count(g, OpKind::Contract), 1);
}

TEST(Elaborate, PowerForms) {
  auto g =
      compile(spec("def f(x: \"f32[M]\") -> (\"f32[M]\", \"f32[M]\", \"f32[M]\"):\n    return x ** "
                   "3, x ** 0.5, x ** 1.7\n"));
  EXPECT_EQ(g.node(g.outputs[0]).kind, OpKind::PowI);
  EXPECT_EQ(g.node(g.outputs[0]).exponent, 3);
  EXPECT_EQ(g.node(g.outputs[1]).kind, OpKind::Sqrt);
  EXPECT_EQ(g.node(g.outputs[2]).kind, OpKind::Pow);
}

TEST(Elaborate, ScaleBySqrtOfDimIsWeak) {
  auto g =
      compile(spec("import math\ndef f(q: \"f32[S, HD]\", k: \"f32[S, HD]\") -> \"f32[S, S]\":\n"
                   "    return (q @ k.T) / math.sqrt(q.shape[-1])\n"));
  EXPECT_EQ(out_type(g), "f32[S, S]");
  EXPECT_EQ(count(g, OpKind::Sqrt), 1);
}

TEST(ParseDimsFlag, Parses) {
  auto d = parse_dims_flag("M=256, N = 128");
  EXPECT_EQ(d.at("M"), 256);
  EXPECT_EQ(d.at("N"), 128);
  try {
    parse_dims_flag("M=0");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "--dims");
    EXPECT_HAS(e.what(), "positive integer");
  }
  try {
    parse_dims_flag("M=1,M=2");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "given twice");
  }
  try {
    parse_dims_flag("M256");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "expected NAME=SIZE");
  }
}

TEST(LoadSpec, UnreadableFileNamesThePath) {
  try {
    load_spec("/nonexistent/dir/spec.py", {});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "/nonexistent/dir/spec.py");
  }
}

// ---------------------------------------------------------------------------- errors

TEST(ElaborateErrors, BooleanMaskIsDataDependent) {
  auto e = error_of(spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return x[x > 0]\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "data-dependent shape");
  EXPECT_HAS(e.hint, "np.where(mask, x, 0)");
}

TEST(ElaborateErrors, ReshapeMinusOneThatDoesNotDivideShowsTheCounts) {
  auto e = error_of(
      spec("def f(x: \"f32[M, K]\") -> \"f32[M, K]\":\n    y = x.reshape(5, -1)\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 9);
  EXPECT_HAS(e.message,
             "cannot reshape f32[M, K] into [5, -1]: K*M = 24 elements are not divisible by 5");
  EXPECT_HAS(e.hint, "must divide the element count");
}

TEST(ElaborateErrors, NonzeroIsDataDependent) {
  auto e =
      error_of(spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    i = np.nonzero(x)\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 9);
  EXPECT_HAS(e.message, "data-dependent shape");
  EXPECT_HAS(e.hint, "np.where");
}

TEST(ElaborateErrors, MatmulMismatchNamesBothShapes) {
  auto e = error_of(
      spec("def f(a: \"f32[M, K]\", b: \"f32[N, M]\") -> \"f32[M, M]\":\n    return a @ b\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 14);
  EXPECT_HAS(e.message, "matmul shape mismatch: f32[M, K] @ f32[N, M]: K != N");
  EXPECT_HAS(e.hint, "last dim");
}

TEST(ElaborateErrors, FailedBroadcast) {
  auto e = error_of(
      spec("def f(a: \"f32[M, K]\", b: \"f32[N]\") -> \"f32[M, K]\":\n    return a + b\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 14);
  EXPECT_HAS(e.message, "cannot broadcast f32[M, K] and f32[N]: dims K and N differ");
  EXPECT_HAS(e.hint, "broadcasting");
}

// Model code that writes a size as a literal where the annotations name a dim (a head size
// of 8 for HD): the hint names the literal, the dim, and the two ways to say what is meant.
TEST(ElaborateErrors, ALiteralThatEqualsADimOnlyAtTheBoundDims) {
  auto e =
      error_of(spec("def f(a: \"f32[M, 2*HD]\", b: \"f32[HD]\") -> \"f32[M, 2, HD]\":\n"
                    "    return a.reshape(4, 2, 8) + b\n"));
  EXPECT_HAS(e.message, "cannot broadcast f32[4, 2, 8] and f32[HD]: dims 8 and HD differ");
  EXPECT_HAS(e.hint, "the literal 8 equals HD at the bound dims");
  EXPECT_HAS(e.hint, "RELATIONS = [\"HD = 8\"]");
  EXPECT_HAS(e.hint, "x.shape[-1]");
  auto m =
      error_of(spec("def f(a: \"f32[M, K]\", b: \"f32[6, N]\") -> \"f32[M, N]\":\n"
                    "    return a @ b\n"));
  EXPECT_HAS(m.message, "K != 6");
  EXPECT_HAS(m.hint, "the literal 6 equals K at the bound dims");
}

TEST(ElaborateErrors, UnknownDim) {
  auto e = error_of(spec("def f(a: \"f32[M, Q]\") -> \"f32[M]\":\n    return a.sum(axis=1)\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 18);  // the Q inside the string
  EXPECT_HAS(e.message, "unknown dim 'Q'");
  EXPECT_HAS(e.hint, "add it to DIMS = dict(...) or pass --dims Q=SIZE");
}

TEST(ElaborateErrors, AnnotationEndsEarly) {
  auto e = error_of(spec("def f(a: \"f32[M,\") -> \"f32[M]\":\n    return a\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 17);  // just past the comma
  EXPECT_HAS(e.message, "ends early");
  EXPECT_HAS(e.hint, "\"f32[M, K]\"");
}

TEST(ElaborateErrors, AnnotationBadDtype) {
  auto e = error_of(spec("def f(a: \"f33[M]\") -> \"f32[M]\":\n    return a\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 11);
  EXPECT_HAS(e.message, "unknown dtype 'f33'");
  EXPECT_HAS(e.hint, "f32, f64");
}

TEST(ElaborateErrors, AnnotationMissingBracket) {
  auto e = error_of(spec("def f(a: \"f32 M]\") -> \"f32[M]\":\n    return a\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 15);
  EXPECT_HAS(e.message, "expected '['");
  EXPECT_HAS(e.hint, "brackets");
}

TEST(ElaborateErrors, AnnotationMissingComma) {
  auto e = error_of(spec("def f(a: \"f32[M K]\") -> \"f32[M]\":\n    return a.sum(axis=1)\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 17);
  EXPECT_HAS(e.message, "expected ',' or ']'");
  EXPECT_HAS(e.hint, "\"f32[M, K]\"");
}

TEST(ElaborateErrors, EntryWithoutAllAnnotations) {
  auto e = error_of(spec("def f(a: \"f32[M]\", b) -> \"f32[M]\":\n    return a\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 20);
  EXPECT_HAS(e.message, "entry 'f' needs annotations");
  EXPECT_HAS(e.hint, "b: \"f32[M, K]\"");
}

TEST(ElaborateErrors, NoEntry) {
  auto e = error_of(spec("def f(a, b):\n    return a\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "no entry function");
  EXPECT_HAS(e.hint, "annotate");
}

TEST(ElaborateErrors, AmbiguousEntry) {
  auto e =
      error_of(spec("def f(a: \"f32[M]\") -> \"f32[M]\":\n    return a\n"
                    "def g(a: \"f32[M]\") -> \"f32[M]\":\n    return a\n"));
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "ambiguous entry: functions f, g");
  EXPECT_HAS(e.hint, "--entry");
}

// Helpers as model code writes them: Python types on their parameters (`dim: int`), or
// array annotations without a return annotation. Neither competes with the entry.
TEST(Elaborate, HelpersWithTypeHintsAreNotEntries) {
  auto g =
      compile(spec("def freqs(dim: int, end: int, theta: float = 10000.0):\n"
                   "    return np.arange(end) * (1.0 / theta) * dim\n"
                   "def norm(x: \"f32[M]\"):\n    return x * 2.0\n"
                   "def f(a: \"f32[M]\") -> \"f32[M]\":\n    return norm(a)\n"));
  EXPECT_EQ(g.entry, "f");
  // Only Python types everywhere: no entry, and the error says how to annotate one.
  auto e = error_of(spec("def f(n: int) -> int:\n    return n\n"));
  EXPECT_HAS(e.message, "no entry function");
}

TEST(ElaborateErrors, UnknownEntryOption) {
  SpecOptions opt;
  opt.entry = "nope";
  try {
    compile(spec("def f(a: \"f32[M]\") -> \"f32[M]\":\n    return a\n"), opt);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "--entry: no function 'nope'");
    EXPECT_HAS(e.what(), "its functions are f");
  }
}

TEST(ElaborateErrors, UnknownDimsOverride) {
  SpecOptions opt;
  opt.dim_overrides = {{"X", 3}};
  try {
    compile(spec("def f(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[M, N]\":\n    return a @ b\n"),
            opt);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "--dims: unknown dim 'X'; the dims of f are M, K, N");
  }
}

TEST(ElaborateErrors, ReturnDtypeMismatch) {
  auto e = error_of(
      spec("def f(a: \"f32[M, N]\", b: \"f64[M, N]\") -> \"f32[M, N]\":\n    return a + b\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "returns f64[M, N] but the annotation says f32[M, N]");
  EXPECT_HAS(e.hint, "add .astype(np.float32)");
}

TEST(ElaborateErrors, ReturnShapeMismatch) {
  auto e =
      error_of(spec("def f(a: \"f32[M, N]\") -> \"f32[N, M]\":\n    y = a * 2\n    return y\n"));
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "returns f32[M, N] but the annotation says f32[N, M]");
  EXPECT_HAS(e.hint, "shapes must agree");
}

TEST(ElaborateErrors, UnknownNumpyFunction) {
  auto e = error_of(spec("def f(a: \"f32[M]\") -> \"f32[M]\":\n    return np.fft.fft(a)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "np.fft.fft is not supported in a spec");
  EXPECT_HAS(e.hint, "supported numpy");
}

TEST(ElaborateErrors, NpErfIsNotNumpy) {
  auto e =
      error_of(spec("def f(a: \"f32[M]\") -> \"f32[M]\":\n    return 0.5 * a * (1 + np.erf(a))\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 27);
  EXPECT_HAS(e.message, "np.erf is not a numpy function");
  EXPECT_HAS(e.hint, "tanh");
}

TEST(ElaborateErrors, UnknownName) {
  auto e = error_of(spec("def f(a: \"f32[M]\") -> \"f32[M]\":\n    return a * foo\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 16);
  EXPECT_EQ(e.message, "name 'foo' is not defined");
  EXPECT_HAS(e.hint, "define it");
}

TEST(ElaborateErrors, TupleUnpackArity) {
  auto e =
      error_of(spec("def h(x):\n    return x, x, x\n"
                    "def f(a: \"f32[M]\") -> \"f32[M]\":\n    p, q = h(a)\n    return p\n"));
  EXPECT_EQ(e.line, 6);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "cannot unpack 3 values into 2 names");
  EXPECT_HAS(e.hint, "number of names");
}

TEST(ElaborateErrors, Recursion) {
  auto e =
      error_of(spec("def h(x):\n    return h(x)\n"
                    "def f(a: \"f32[M]\") -> \"f32[M]\":\n    return h(a)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "recursive call to 'h'");
  EXPECT_HAS(e.hint, "without recursion");
}

TEST(ElaborateErrors, AxisOutOfRange) {
  auto e = error_of(spec("def f(a: \"f32[M, N]\") -> \"f32[M]\":\n    return a.sum(axis=2)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "axis 2 is out of bounds for an array of rank 2");
  EXPECT_HAS(e.hint, "between -2 and 1");
}

TEST(ElaborateErrors, ReshapeNotDivisible) {
  auto e = error_of(spec("def f(a: \"f32[M, K]\") -> \"f32[M]\":\n    return a.reshape(-1, 5)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "cannot reshape f32[M, K] into [-1, 5]");
  EXPECT_HAS(e.message, "not divisible by 5");
  EXPECT_HAS(e.hint, "divide the element count");
}

TEST(ElaborateErrors, ReshapeWrongCount) {
  auto e = error_of(
      spec("def f(a: \"f32[M, K]\") -> \"f32[M]\":\n    return a.reshape(a.shape[0], 5)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "element counts");
  EXPECT_HAS(e.hint, "as many elements");
}

// Without '->', numpy's implicit output: the labels that appear once, in ASCII order.
TEST(Elaborate, EinsumImplicitModeOrdersLabelsAsNumpy) {
  auto g =
      compile(spec("def f(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[N, M]\":\n"
                   "    return np.einsum(\"bA,AC\", a, b)\n"));
  EXPECT_EQ(out_type(g), "f32[N, M]");
  auto e =
      error_of(spec("def f(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[N, M]\":\n"
                    "    return np.einsum(\"ij,jk\", a, b)\n"));
  EXPECT_HAS(e.message, "returns f32[M, N] but the annotation says f32[N, M]");
}

TEST(ElaborateErrors, EinsumRepeatedLabel) {
  auto e =
      error_of(spec("def f(a: \"f32[M, M]\") -> \"f32[]\":\n    return np.einsum(\"ii->\", a)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_HAS(e.message, "label 'i' repeats within operand 'ii'");
  EXPECT_HAS(e.hint, "repeated labels");
}

// '...' must reach the output, as numpy requires; too many named axes is an error too.
TEST(ElaborateErrors, EinsumEllipsisMissingFromTheOutput) {
  auto e =
      error_of(spec("def f(a: \"f32[B, M, K]\", b: \"f32[K, N]\") -> \"f32[N]\":\n"
                    "    return np.einsum(\"...k,kn->n\", a, b)\n"));
  EXPECT_HAS(e.message, "the operands' '...' axes are missing from the output");
  EXPECT_HAS(e.hint, "...i,ij->...j");
  auto r =
      error_of(spec("def f(a: \"f32[K]\") -> \"f32[K]\":\n"
                    "    return np.einsum(\"...ij->...i\", a)\n"));
  EXPECT_HAS(r.message, "names 2 axes besides '...'");
}

TEST(ElaborateErrors, PrintIsNotAllowed) {
  auto e = error_of(spec("def f(a: \"f32[M]\") -> \"f32[M]\":\n    print(a)\n    return a\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "print() is not allowed");
  EXPECT_HAS(e.hint, "remove the print");
}

TEST(ElaborateErrors, TooLargeArray) {
  auto e = error_of(
      spec("def f(a: \"f32[M]\") -> \"f64[M]\":\n    z = np.zeros((10**12,))\n    return a\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 9);
  EXPECT_HAS(e.message, "too large");
  EXPECT_HAS(e.hint, "2^34");
}

TEST(ElaborateErrors, UnexpectedKeyword) {
  auto e = error_of(spec("def f(a: \"f32[M, N]\") -> \"f32[M]\":\n    return np.sum(a, axes=1)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 22);
  EXPECT_HAS(e.message, "unexpected keyword argument 'axes'");
  EXPECT_HAS(e.hint, "axis");
}

TEST(ElaborateErrors, BadImport) {
  auto e = error_of("import torch\n");
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.col, 1);
  EXPECT_HAS(e.message, "import of 'torch' is not supported");
  EXPECT_HAS(e.hint, "numpy");
}

// Regression (corpus): a float computed from a dim is not "array values"; the message
// must say it is a float and show how to write it with integer bounds.
TEST(ElaborateErrors, ArangeFloatBoundFromDim) {
  auto e = error_of(spec(
      "def f(a: \"f32[M]\") -> \"f64[M]\":\n    return np.arange(0.0, a.shape[0] * 0.5, 0.5)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "must be an integer, but it is a float computed from a dim");
  EXPECT_EQ(e.message.find("array values"), std::string::npos) << e.message;
  EXPECT_HAS(e.hint, "np.arange(n) * 0.5");
}

// Regression (corpus): np.stack's shape mismatch names the shapes as the user gave them,
// not the first array after it was given the new axis.
TEST(ElaborateErrors, StackMismatchShowsGivenShapes) {
  auto e = error_of(
      spec("def f(a: \"f32[M, N]\") -> \"f32[2, M, N]\":\n    return np.stack([a, a[:1]])\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_HAS(e.message, "np.stack needs arrays of equal shape: f32[M, N] and f32[1, N]");
}

// Regression (random specs, seeds 16 and 652): reshape(-1, ...) whose known sizes are a sum
// (K - 1 from a slice) divides only term by term; the -1 is still inferred from the old sizes.
TEST(Elaborate, ReshapeInfersMinusOneAgainstSumSizes) {
  auto g =
      compile(spec("def f(a: \"f32[M, K, N]\") -> \"f32[M]\":\n"
                   "    N = a.shape[2]\n"
                   "    t = a[:, 1:]\n"
                   "    return t.reshape(-1, t.shape[1] * N).sum(axis=1)\n"));
  const ir::Node* r = nullptr;
  for (auto& node : g.nodes)
    if (node.kind == OpKind::Reshape && node.shape.size() == 2) r = &node;
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->shape[0], ir::DimExpr::symbol("M"));
  EXPECT_EQ(r->shape[1],
            (ir::DimExpr::symbol("K") - ir::DimExpr::constant(1)) * ir::DimExpr::symbol("N"));
  EXPECT_EQ(out_type(g), "f32[M]");
}

// Regression (random specs, seed 673): a -1 that stands for exactly 1 ([K - 1] -> [-1, K - 1]).
TEST(Elaborate, ReshapeInfersMinusOneAsOne) {
  auto g =
      compile(spec("def f(a: \"f32[K]\") -> \"f32[1]\":\n"
                   "    t = a[1:]\n"
                   "    return t.reshape(-1, t.shape[0]).sum(axis=1)\n"));
  EXPECT_EQ(out_type(g), "f32[1]");
}

// Regression (random specs, seed 1701): broadcasting a literal 1 against S//2 keeps S//2,
// even where S//2 happens to be 1 (S = 3), so a later matmul over that dim still checks.
TEST(Elaborate, BroadcastOneAgainstFloorDivKeepsTheDim) {
  auto g =
      compile(spec("def f(a: \"f32[S]\") -> \"f32[]\":\n"
                   "    t = a[1::2]\n"
                   "    u = t[:, None] * t\n"
                   "    return (u @ t).sum()\n"));
  const ir::Node* mul = find(g, OpKind::Mul);
  ASSERT_NE(mul, nullptr);
  ASSERT_EQ(mul->shape.size(), 2u);
  EXPECT_EQ(mul->shape[0], mul->shape[1]);
  EXPECT_FALSE(mul->shape[1].is_constant()) << ir::shape_str(mul->shape);
  EXPECT_EQ(out_type(g), "f32[]");
}

// scipy.special: its supported functions by every import form, the rest refused with the
// list of what is supported.
TEST(Elaborate, ScipySpecialByEveryImportForm) {
  for (const char* head :
       {"import scipy.special\n", "import scipy\n", "import scipy.special as sp\n",
        "from scipy import special\n", "from scipy.special import erf\n"}) {
    const std::string call =
        std::string(head).find(" as sp") != std::string::npos           ? "sp.erf"
        : std::string(head).find("import special") != std::string::npos ? "special.erf"
        : std::string(head).find("import erf") != std::string::npos     ? "erf"
                                                                        : "scipy.special.erf";
    auto g = compile(std::string(head) +
                     spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return " + call + "(x)\n"));
    EXPECT_NE(find(g, OpKind::Erf), nullptr) << head;
  }
  auto gamma = error_of("from scipy.special import gamma\n" +
                        spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return gamma(x)\n"));
  EXPECT_HAS(gamma.message, "scipy.special.gamma is not supported");
  EXPECT_HAS(gamma.hint, "logsumexp");
  auto stats = error_of("import scipy.stats\n" +
                        spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return x\n"));
  EXPECT_HAS(stats.message, "import of 'scipy.stats' is not supported");
  auto weights =
      error_of("from scipy.special import logsumexp\n" +
               spec("def f(x: \"f32[M]\") -> \"f32[]\":\n    return logsumexp(x, b=x)\n"));
  EXPECT_HAS(weights.message, "b= or return_sign=True");
}

// np.finfo's limits are NumPy scalars of their type, strong in promotion as numpy's are
// (a float16 array meeting np.finfo(np.float32).min becomes float32); iinfo's are ints.
TEST(Elaborate, FinfoLimitsAreStrongScalarsOfTheirType) {
  auto g = compile(spec(
      "def f(x: \"f16[M]\") -> \"f32[M]\":\n    return np.maximum(x, np.finfo(np.float32).min)\n"));
  EXPECT_EQ(out_type(g), "f32[M]");
  auto h =
      compile(spec("def f(x: \"f16[M]\") -> \"f16[M]\":\n"
                   "    return x * np.finfo(x.dtype).eps + np.iinfo(np.int32).bits\n"));
  EXPECT_EQ(out_type(h), "f16[M]");
  auto bad = error_of(
      spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return x + np.finfo(np.int64).max\n"));
  EXPECT_HAS(bad.message, "np.finfo of i64: not a floating type");
  EXPECT_HAS(bad.hint, "np.iinfo");
}

// The composed numpy functions (src/spec/elab_derived.cpp) refuse what numpy refuses, or
// what a spec cannot express, with the place and what to write.
TEST(ElaborateErrors, DerivedFunctionsRefuseWhatNumpyRefuses) {
  auto bad_broadcast = error_of(
      spec("def f(x: \"f32[M, K]\") -> \"f32[M, N]\":\n    return np.broadcast_to(x, (M, N))\n"
           "M, N = 4, 8\n"));
  EXPECT_HAS(bad_broadcast.message, "cannot be broadcast to");
  auto weights = error_of(spec(
      "def f(x: \"f32[M, K]\") -> \"f32[M]\":\n    return np.average(x, axis=1, weights=x)\n"));
  EXPECT_HAS(weights.message, "np.average with weights");
  EXPECT_HAS(weights.hint, "w.sum(axis)");
  auto sign_bool =
      error_of(spec("def f(x: \"f32[M]\") -> \"f32[M]\":\n    return np.sign(x > 0) * x\n"));
  EXPECT_HAS(sign_bool.message, "np.sign of a boolean array");
  auto axes =
      error_of(spec("def f(x: \"f32[M, K]\") -> \"f32[M]\":\n    return np.tensordot(x, x, "
                    "axes=([0, 1], [1]))\n"));
  EXPECT_HAS(axes.message, "differ in length");
}

}  // namespace
}  // namespace ollie::spec
