// Tests of dim expressions in annotations ("f32[T, 3*D]") and RELATIONS among dims
// ("D = H * HD"): derived dims substituted by their free dims, shapes unified wherever
// the relation holds, --dims checked against the relations, and located errors; plus
// numpy's hstack, vstack, array_split and .T on N-d arrays.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "spec/spec.h"
#include "spec_test_util.h"

namespace ollie::spec {
namespace {

using namespace spec_tests;

// Line 1 imports numpy, line 2 is DIMS, line 3 RELATIONS; the body starts on line 4.
std::string spec(const std::string& body,
                 const std::string& relations = "RELATIONS = [\"D = H * HD\"]") {
  return "import numpy as np\nDIMS = dict(T=5, H=3, HD=4, D=12)\n" + relations + "\n" + body;
}

std::string param_type(const ir::Graph& g, size_t i) {
  return std::string(ir::dtype_name(g.params.at(i).dtype)) + ir::shape_str(g.params.at(i).shape);
}

std::string user_error_of(const std::string& src, const SpecOptions& opt) {
  try {
    compile(src, opt);
  } catch (const SpecError& e) {
    ADD_FAILURE() << "a located error where a flag error was expected: " << e.what();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError for:\n" << src;
  return {};
}

// ---------------------------------------------------------------------------- annotations

TEST(DimExprAnnotation, ProductsAndSumsOfDims) {
  auto g = compile(
      "import numpy as np\nDIMS = dict(T=5, D=4, S=3)\n"
      "def f(x: \"f32[T, 3*D]\", y: \"f32[S, D + 1]\", z: \"f32[(S + 1) * 2, D*S - 2]\") "
      "-> \"f32[T, 3 * D]\":\n    return x\n");
  EXPECT_EQ(param_type(g, 0), "f32[T, 3*D]");
  EXPECT_EQ(param_type(g, 1), "f32[S, D + 1]");
  EXPECT_EQ(param_type(g, 2), "f32[2*S + 2, D*S - 2]");
  EXPECT_EQ(out_type(g), "f32[T, 3*D]");
  // The free dims are the names, in order of first appearance.
  EXPECT_EQ(g.dims, (std::vector<std::string>{"T", "D", "S"}));
}

TEST(DimExprAnnotation, SplitOfThreeDIntoD) {
  auto g = compile(
      "import numpy as np\nDIMS = dict(T=5, D=4)\n"
      "def f(qkv: \"f32[T, 3*D]\", w: \"f32[D, 3*D]\") -> \"f32[T, D]\":\n"
      "    q, k, v = np.split(qkv, 3, axis=-1)\n"
      "    y = np.split(q @ w, 3, axis=1)[0]\n"
      "    return q + k * v + y\n");
  EXPECT_EQ(out_type(g), "f32[T, D]");
}

// numpy's np.split(x, n) raises unless n divides the axis, so joining the n parts again
// (hstack, concatenate, a reshape of the heads) gives back D, not 4*(D//4): picoGPT's
// heads, with no RELATIONS needed.
TEST(DimExprAnnotation, SplitIntoHeadsAndJoinedAgainIsD) {
  auto g = compile(
      "import numpy as np\nDIMS = dict(T=5, D=8)\n"
      "def f(x: \"f32[T, D]\", w: \"f32[D, D]\") -> \"f32[T, D]\":\n"
      "    heads = np.split(x, 4, axis=-1)\n"
      "    y = np.hstack([h * 2.0 for h in heads])\n"
      "    z = np.stack(heads, axis=0).transpose(1, 0, 2).reshape(x.shape[0], -1)\n"
      "    return (y + z) @ w\n");
  EXPECT_EQ(out_type(g), "f32[T, D]");
  // Three of the four parts stay 3*(D//4): only whole multiples of the part are D.
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, D=8)\n"
      "def f(x: \"f32[T, D]\", w: \"f32[D, D]\") -> \"f32[T, D]\":\n"
      "    a, b, c, d = np.split(x, 4, axis=-1)\n"
      "    return np.hstack([a, b, c]) @ w\n");
  EXPECT_HAS(e.message, "3*(D//4)");
}

TEST(DimExprAnnotation, ModuleConstantInAnnotation) {
  auto g = compile(
      "import numpy as np\nN_HEAD = 4\nDIMS = dict(B=2, HD=8)\n"
      "def f(x: \"f32[B, N_HEAD*HD]\") -> \"f32[B, N_HEAD, HD]\":\n"
      "    return x.reshape(x.shape[0], N_HEAD, -1)\n");
  EXPECT_EQ(param_type(g, 0), "f32[B, 4*HD]");
  EXPECT_EQ(g.dims, (std::vector<std::string>{"B", "HD"}));
}

TEST(DimExprAnnotationErrors, DivisionIsLocatedWithTheRelationHint) {
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, D=4, H=2)\n"
      "def f(x: \"f32[T, D/H]\") -> \"f32[T]\":\n    return x.sum(axis=1)\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 19);  // the '/'
  EXPECT_HAS(e.message, "division in a dim of annotation \"f32[T, D/H]\"");
  EXPECT_HAS(e.hint, "D = H * HD");
}

TEST(DimExprAnnotationErrors, FloatFactorIsLocated) {
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, D=4)\n"
      "def f(x: \"f32[T, 2.5*D]\") -> \"f32[T]\":\n    return x.sum(axis=1)\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 18);
  EXPECT_HAS(e.message, "a dim must be an integer");
}

TEST(DimExprAnnotationErrors, DanglingOperatorAndUnclosedParen) {
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, D=4)\n"
      "def f(x: \"f32[T, 3*]\") -> \"f32[T]\":\n    return x.sum(axis=1)\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 20);
  EXPECT_HAS(e.message, "expected a dim name or size in annotation \"f32[T, 3*]\", not ']'");
  auto p = error_of(
      "import numpy as np\nDIMS = dict(T=5, D=4)\n"
      "def f(x: \"f32[T, (D + 1]\") -> \"f32[T]\":\n    return x.sum(axis=1)\n");
  EXPECT_EQ(p.line, 3);
  EXPECT_EQ(p.col, 24);
  EXPECT_HAS(p.message, "expected ')'");
}

TEST(DimExprAnnotationErrors, UnknownNameInAProduct) {
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, D=4)\n"
      "def f(x: \"f32[T, Q*D]\") -> \"f32[T]\":\n    return x.sum(axis=1)\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 18);  // the Q
  EXPECT_HAS(e.message, "unknown dim 'Q'");
}

TEST(DimExprAnnotationErrors, SizesThatWouldOverflowAreReportedNotComputed) {
  SpecOptions opt;
  opt.dim_overrides = {{"D", 100000}};
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, D=4)\n"
      "def f(x: \"f32[T, D*D*D*D]\") -> \"f32[T]\":\n    return x.sum(axis=1)\n",
      opt);
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 18);
  EXPECT_HAS(e.message, "the size of this dim is too large at the bound dims");
  auto r = error_of(spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n",
                         "RELATIONS = [\"E = HD * HD * HD * HD\"]"),
                    opt = SpecOptions{"", {{"HD", 100000}}});
  EXPECT_EQ(r.line, 3);
  EXPECT_EQ(r.col, 15);
  EXPECT_HAS(r.message, "the size of E is too large");
}

TEST(DimExprAnnotationErrors, ProductWithANonIntegerConstant) {
  auto e = error_of(
      "import numpy as np\nEPS = 1e-5\nDIMS = dict(T=5, D=4)\n"
      "def f(x: \"f32[T, EPS*D]\") -> \"f32[T]\":\n    return x.sum(axis=1)\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 18);
  EXPECT_HAS(e.message, "'EPS' is a float, not a dim or an integer");
  EXPECT_HAS(e.hint, "module integer constants");
}

// ---------------------------------------------------------------------------- relations

TEST(Relations, DerivedDimIsItsExpressionAndNotAnAbiDim) {
  auto g =
      compile(spec("def f(x: \"f32[T, D]\") -> \"f32[T, H, HD]\":\n"
                   "    return x.reshape(x.shape[0], DIMS['H'], DIMS['HD'])\n"));
  EXPECT_EQ(param_type(g, 0), "f32[T, H*HD]");
  EXPECT_EQ(g.dims, (std::vector<std::string>{"T", "H", "HD"}));
  EXPECT_EQ(g.bound_dims, (ir::DimBindings{{"T", 5}, {"H", 3}, {"HD", 4}}));
}

TEST(Relations, ShapesUnifyWhereTheRelationHolds) {
  // matmul [T, D] @ [D, 3*D], split into [T, D] pieces, heads reshaped to [T, H, HD] and
  // back, broadcast against [D], returned as [T, D].
  auto g = compile(
      spec("def f(x: \"f32[T, D]\", w: \"f32[D, 3*D]\", b: \"f32[D]\", g: \"f32[H, HD]\") -> "
           "\"f32[T, D]\":\n"
           "    q, k, v = np.split(x @ w, 3, axis=-1)\n"
           "    T, D = x.shape\n"
           "    H = g.shape[0]\n"
           "    qh = q.reshape(T, H, D // H) * g\n"
           "    return qh.reshape(T, D) + k * v + b\n"));
  EXPECT_EQ(out_type(g), "f32[T, H*HD]");
}

TEST(Relations, ModuleConstantInTheRelationMakesFloorDivisionExact) {
  auto g = compile(
      "import numpy as np\nN_HEAD = 4\nDIMS = dict(T=5, HD=8)\n"
      "RELATIONS = [\"D = N_HEAD * HD\"]\n"
      "def f(x: \"f32[T, D]\", y: \"f32[T, N_HEAD, HD]\") -> \"f32[T, D]\":\n"
      "    T, D = x.shape\n"
      "    h = x.reshape(T, N_HEAD, D // N_HEAD) + y\n"
      "    return h.reshape(T, D)\n");
  EXPECT_EQ(out_type(g), "f32[T, 4*HD]");
  EXPECT_EQ(g.dims, (std::vector<std::string>{"T", "HD"}));
}

TEST(Relations, GqaRelationAndChainedRelations) {
  auto g = compile(
      "import numpy as np\nDIMS = dict(T=5, KVH=2, HD=4)\n"
      "RELATIONS = [\"QH = 4 * KVH\", \"D = QH * HD\", \"F = 2 * D + 8\"]\n"
      "def f(q: \"f32[QH, T, HD]\", k: \"f32[KVH, T, HD]\", w: \"f32[D, F]\") -> "
      "\"f32[KVH, 4, T, T]\":\n"
      "    qg = q.reshape(k.shape[0], -1, q.shape[1], q.shape[2])\n"
      "    return qg @ k[:, None].swapaxes(-1, -2)\n");
  EXPECT_EQ(param_type(g, 0), "f32[4*KVH, T, HD]");
  EXPECT_EQ(param_type(g, 2), "f32[4*HD*KVH, 8*HD*KVH + 8]");
  EXPECT_EQ(g.dims, (std::vector<std::string>{"KVH", "T", "HD"}));
}

TEST(Relations, OverridingAFreeDimChangesTheDerivedOne) {
  SpecOptions opt;
  opt.dim_overrides = {{"H", 6}};
  auto g = compile(spec("def f(x: \"f32[T, D]\") -> \"f32[T, D]\":\n    return x\n"), opt);
  EXPECT_EQ(g.bound_dims.at("H"), 6);
  EXPECT_EQ(ir::evaluate_shape(g.params[0].shape, g.bound_dims), (std::vector<int64_t>{5, 24}));
  // A --dims value of the derived dim that agrees with the relation is accepted.
  opt.dim_overrides = {{"H", 6}, {"D", 24}};
  EXPECT_NO_THROW(compile(spec("def f(x: \"f32[T, D]\") -> \"f32[T, D]\":\n    return x\n"), opt));
}

TEST(Relations, DimsSubscriptOfADerivedDimIsSymbolic) {
  auto g =
      compile(spec("def f(x: \"f32[T, H, HD]\") -> \"f32[T, D]\":\n"
                   "    return x.reshape(-1, DIMS[\"D\"])\n"));
  EXPECT_EQ(out_type(g), "f32[T, H*HD]");
}

TEST(RelationsErrors, DimsFlagThatBreaksARelationNamesIt) {
  SpecOptions opt;
  opt.dim_overrides = {{"D", 16}};
  std::string e =
      user_error_of(spec("def f(x: \"f32[T, D]\") -> \"f32[T, D]\":\n    return x\n"), opt);
  EXPECT_HAS(e, "--dims D=16 breaks the relation \"D = H * HD\": H*HD = 12 at H=3, HD=4");
  EXPECT_HAS(e, "set the free dims");
}

TEST(RelationsErrors, RelationThatContradictsDims) {
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, H=3, HD=4, D=10)\nRELATIONS = [\"T = 1\", "
      "\"D = H * HD\"]\ndef f(x: \"f32[T, D]\") -> \"f32[T, D]\":\n    return x\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 24);  // the D of the second relation
  EXPECT_HAS(e.message,
             "relation \"D = H * HD\" contradicts DIMS: DIMS gives D = 10 but H*HD = 12 at H=3, "
             "HD=4");
  EXPECT_HAS(e.hint, "fix DIMS or the relation");
}

TEST(RelationsErrors, MalformedRelationsAreLocated) {
  auto div = error_of(
      spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n", "RELATIONS = [\"HD = D / H\"]"));
  EXPECT_EQ(div.line, 3);
  EXPECT_EQ(div.col, 22);
  EXPECT_HAS(div.message, "division in a dim of relation \"HD = D / H\"");
  auto no_eq = error_of(
      spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n", "RELATIONS = [\"D == H*HD\"]"));
  EXPECT_EQ(no_eq.line, 3);
  EXPECT_EQ(no_eq.col, 18);
  EXPECT_HAS(no_eq.message, "expected a dim name or size in relation \"D == H*HD\", not '='");
  auto both = error_of(
      spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n", "RELATIONS = [\"D = 2 * D\"]"));
  EXPECT_EQ(both.col, 23);
  EXPECT_HAS(both.message, "dim 'D' appears on both sides");
  auto twice = error_of(spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n",
                             "RELATIONS = [\"D = H * HD\", \"D = 12\"]"));
  EXPECT_EQ(twice.col, 29);
  EXPECT_HAS(twice.message, "dim 'D' is defined by two relations");
  auto unknown = error_of(
      spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n", "RELATIONS = [\"D = H * Q\"]"));
  EXPECT_EQ(unknown.col, 23);
  EXPECT_HAS(unknown.message, "unknown dim 'Q'");
  auto later = error_of(spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n",
                             "RELATIONS = [\"F = 4 * D\", \"D = H * HD\"]"));
  EXPECT_EQ(later.col, 23);
  EXPECT_HAS(later.message, "dim 'D' is defined by a later relation \"D = H * HD\"");
  auto digit = error_of(
      spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n", "RELATIONS = [\" 12 = D\"]"));
  EXPECT_EQ(digit.col, 16);
  EXPECT_HAS(digit.message, "a relation starts with the dim it defines");
  auto neg = error_of(
      spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n", "RELATIONS = [\"E = H - HD\"]"));
  EXPECT_EQ(neg.col, 15);
  EXPECT_HAS(neg.message, "gives E = -1 at H=3, HD=4; a dim must be positive");
}

TEST(RelationsErrors, RelationsMustBeALiteralListOfStrings) {
  auto e = error_of(
      spec("def f(x: \"f32[T]\") -> \"f32[T]\":\n    return x\n", "RELATIONS = [\"D\" + \"=1\"]"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 1);
  EXPECT_HAS(e.message, "RELATIONS must be one module-level list of string literals");
}

TEST(RelationsErrors, SymbolicDivisorWithoutARelation) {
  auto e = error_of(
      "import numpy as np\nDIMS = dict(T=5, H=3, D=12)\n"
      "def f(x: \"f32[T, D]\", g: \"f32[H]\") -> \"f32[T, D]\":\n"
      "    h = x.reshape(5, g.shape[0], x.shape[1] // g.shape[0])\n    return x\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_HAS(e.message, "'//' of dims needs a positive constant divisor (got H)");
  EXPECT_HAS(e.hint, "RELATIONS");
}

// ---------------------------------------------------------------------------- joining

TEST(Joining, HstackVstackFollowNumpy) {
  auto g = compile(
      "import numpy as np\nDIMS = dict(M=3, N=4, K=2)\n"
      "def f(a: \"f32[M, N]\", b: \"f32[M, K]\", u: \"f32[N]\", v: \"f32[K]\") -> "
      "(\"f32[M, N + K]\", \"f32[N + K]\", \"f32[M + 2, N]\", \"f32[2, K]\"):\n"
      "    return np.hstack([a, b]), np.hstack((u, v)), np.vstack([a, u, u]), np.vstack([v, v])\n");
  EXPECT_EQ(out_type(g, 0), "f32[M, K + N]");
  EXPECT_EQ(out_type(g, 1), "f32[K + N]");
  EXPECT_EQ(out_type(g, 2), "f32[M + 2, N]");
  EXPECT_EQ(out_type(g, 3), "f32[2, K]");
}

TEST(Joining, ArraySplitUnevenFollowsNumpysRule) {
  // 10 into 3: numpy gives 4, 3, 3.
  auto g = compile(
      "import numpy as np\nDIMS = dict(M=2, N=10)\n"
      "def f(x: \"f32[M, N]\") -> (\"f32[M, 4]\", \"f32[M, 3]\", \"f32[M, 3]\"):\n"
      "    a, b, c = np.array_split(x, 3, axis=1)\n"
      "    return a, b, c\n");
  ASSERT_EQ(g.outputs.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(ir::evaluate_shape(g.node(g.outputs[i]).shape, g.bound_dims),
              (std::vector<int64_t>{2, i == 0 ? 4 : 3}));
  // The parts are generic in N: (N + 2)//3, (N + 1)//3 and N//3 (numpy's rule for every N).
  EXPECT_EQ(ir::shape_str(g.node(g.outputs[0]).shape), "[M, 4]");
  std::string parts;
  for (auto& n : g.nodes)
    if (n.kind == ir::OpKind::Slice) parts += ir::shape_str(n.shape) + " ";
  EXPECT_EQ(parts, "[M, ((N + 2)//3)] [M, ((N + 1)//3)] [M, (N//3)] ");
  // Where 3 divides the dim symbolically the parts stay symbolic.
  auto e = compile(
      "import numpy as np\nDIMS = dict(M=2, D=4)\n"
      "def f(x: \"f32[M, 3*D]\") -> \"f32[M, D]\":\n"
      "    a, b, c = np.array_split(x, 3, axis=-1)\n    return a + b - c\n");
  EXPECT_EQ(out_type(e), "f32[M, D]");
}

TEST(JoiningErrors, VstackOfUnequalRowsAndArraySplitOfZeroSections) {
  auto e = error_of(
      "import numpy as np\nDIMS = dict(M=3, N=4, K=2)\n"
      "def f(a: \"f32[M, N]\", v: \"f32[K]\") -> \"f32[M, N]\":\n"
      "    return np.vstack([a, v])\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "np.vstack: f32[M, N] and f32[1, K] differ off axis 0");
  auto z = error_of(
      "import numpy as np\nDIMS = dict(M=3)\n"
      "def f(a: \"f32[M]\") -> \"f32[M]\":\n    p = np.array_split(a, 0)\n    return a\n");
  EXPECT_EQ(z.line, 4);
  EXPECT_HAS(z.message, "np.array_split needs between 1 and 4096 sections, got 0");
}

TEST(Layout, DotTReversesAllAxes) {
  auto g = compile(
      "import numpy as np\nDIMS = dict(A=2, B=3, C=4)\n"
      "def f(x: \"f32[A, B, C]\") -> \"f32[C, B, A]\":\n    return x.T\n");
  EXPECT_EQ(out_type(g), "f32[C, B, A]");
}

}  // namespace
}  // namespace ollie::spec
