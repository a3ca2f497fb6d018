// Tests of the Python-level structure a spec evaluates while it is read: for loops and
// ifs, static lists (comprehensions, lambdas, zip, map), dicts and **kwargs, f-string keys,
// scalar entry parameters held constant, item assignment as a functional update, and the
// call site named in errors inside helpers. Each construct's misuses are pinned by position.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "spec/spec.h"
#include "spec_test_util.h"

namespace ollie::spec {
namespace {

using namespace spec_tests;

using ir::OpKind;

// The source with a standard header (numpy import and DIMS) on lines 1-2.
std::string spec(const std::string& body) {
  return "import numpy as np\nDIMS = dict(M=4, N=6, T=5, D=8)\n" + body;
}

const char* kEntry = "def f(x: \"f32[M, N]\", w: \"f32[3, N]\") -> \"f32[M, N]\":\n";

// ---------------------------------------------------------------------------- for and if

TEST(Static, ForOverRangeUnrollsWithTheIndexInArithmeticAndIndexing) {
  auto g = compile(spec(std::string(kEntry) + "    for i in range(w.shape[0]):\n"
                                              "        x = x + w[i] * (i + 1)\n"
                                              "    return x\n"));
  EXPECT_EQ(count(g, OpKind::Add), 3);
  EXPECT_EQ(count(g, OpKind::Mul), 3);
  EXPECT_EQ(out_type(g), "f32[M, N]");
}

TEST(Static, ForOverTupleZipEnumerateAndRows) {
  auto g = compile(spec(std::string(kEntry) + "    for a, b in zip((1.0, 2.0), [3.0, 4.0, 5.0]):\n"
                                              "        x = x * a + b\n"
                                              "    for j, row in enumerate(w, start=1):\n"
                                              "        x = x - row * j\n"
                                              "    return x\n"));
  EXPECT_EQ(count(g, OpKind::Mul), 2 + 3);  // zip stops at the shorter list
  EXPECT_EQ(count(g, OpKind::Sub), 3);
}

TEST(Static, IfElifElseChoosesOneBranchWhileReading) {
  const std::string body =
      "    if MODE == 'exp':\n"
      "        return np.exp(x)\n"
      "    elif x.shape[1] > 4 and len(x.shape) == 2:\n"
      "        return np.tanh(x)\n"
      "    else:\n"
      "        return x\n";
  auto g1 = compile(spec("MODE = 'exp'\n" + std::string(kEntry) + body));
  EXPECT_EQ(count(g1, OpKind::Exp), 1);
  EXPECT_EQ(count(g1, OpKind::Tanh), 0);
  auto g2 = compile(spec("MODE = 'tanh'\n" + std::string(kEntry) + body));
  EXPECT_EQ(count(g2, OpKind::Exp), 0);
  EXPECT_EQ(count(g2, OpKind::Tanh), 1);
}

TEST(Static, ReturnInsideALoopEndsTheHelper) {
  auto g =
      compile(spec("def first_big(xs, t):\n"
                   "    for v in xs:\n"
                   "        if v > t:\n"
                   "            return v\n"
                   "    return 0.0\n" +
                   std::string(kEntry) + "    return x * first_big((1.0, 5.0, 7.0), 2.0)\n"));
  bool five = false;
  for (auto& n : g.nodes) five = five || (n.kind == OpKind::Const && n.const_value == 5.0);
  EXPECT_TRUE(five);
}

TEST(StaticErrors, ForOverAnArrayOfSymbolicLength) {
  auto e = error_of(spec(std::string(kEntry) + "    for row in x:\n        pass\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 16);
  EXPECT_HAS(e.message, "cannot loop over an array of type f32[M, N]");
  EXPECT_HAS(e.hint, "vectorize");
}

TEST(StaticErrors, ForOverAnIntAndRangeOfADim) {
  auto e = error_of(spec(std::string(kEntry) + "    for i in 3:\n        pass\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 14);
  EXPECT_HAS(e.message, "cannot loop over an int");
  EXPECT_HAS(e.hint, "range(n)");
  e = error_of(
      spec(std::string(kEntry) + "    for i in range(x.shape[0]):\n        pass\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 14);
  EXPECT_HAS(e.message, "range() over the dim expression M");
  EXPECT_HAS(e.hint, "constant count");
}

TEST(StaticErrors, IfOnAnArrayPointsToWhere) {
  auto e =
      error_of(spec(std::string(kEntry) + "    if x.sum() > 0:\n        x = -x\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 8);
  EXPECT_HAS(e.message, "`if` on an array");
  EXPECT_HAS(e.hint, "np.where(cond, a, b)");
  e = error_of(
      spec(std::string(kEntry) + "    if x.shape[0] * 0.5 > 1:\n        x = -x\n    return x\n"));
  EXPECT_EQ(e.col, 8);
  EXPECT_HAS(e.message, "float computed from dims");
}

TEST(StaticErrors, NestedLoopsHaveOneBudget) {
  auto e = error_of(spec(std::string(kEntry) + "    for i in range(300):\n"
                                               "        for j in range(300):\n"
                                               "            pass\n"
                                               "    return x\n"));
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.col, 18);
  EXPECT_HAS(e.message, "more than 65536 loop and comprehension iterations");
  e = error_of(spec(std::string(kEntry) +
                    "    ys = [0 for i in range(300) for j in range(300) if i < 0]\n"
                    "    return x\n"));
  EXPECT_EQ(e.col, 42);
  EXPECT_HAS(e.message, "more than 65536");
}

// ---------------------------------------------------------------------------- static lists

TEST(Static, ComprehensionsLambdasZipAndMap) {
  auto g = compile(spec(
      "def f(x: \"f32[M, N]\") -> (\"f32[M, N]\", \"f32[M, 4]\", \"f32[M, N]\"):\n"
      "    hs = np.split(x, 2, axis=-1)\n"
      "    scaled = [h * (k + 1) for k, h in enumerate(hs) if k < 5]\n"
      "    pairs = list(zip(*[hs, scaled]))\n"
      "    add = lambda p, q=0.0: p[0] + p[1] + q\n"
      "    sums = list(map(add, pairs))\n"
      "    cols = [x[:, i:i + 1] * j for i in range(2) for j in (1.0, 2.0)]\n"
      "    return np.hstack(sums), np.hstack(cols), np.concatenate(scaled[:len(hs)], axis=1)\n"));
  EXPECT_EQ(out_type(g, 0), "f32[M, N]");
  EXPECT_EQ(out_type(g, 1), "f32[M, 4]");
  EXPECT_EQ(out_type(g, 2), "f32[M, N]");
}

TEST(Static, LambdaSeesTheLocalsWhereItIsWritten) {
  auto g = compile(spec(std::string(kEntry) + "    s = 3.0\n"
                                              "    scale = lambda t: t * s\n"
                                              "    return scale(x)\n"));
  bool three = false;
  for (auto& n : g.nodes) three = three || (n.kind == OpKind::Const && n.const_value == 3.0);
  EXPECT_TRUE(three);
}

TEST(Static, VstackMakesRowsOfVectors) {
  auto g = compile(spec(std::string("def f(x: \"f32[M, N]\") -> \"f32[3, N]\":\n") +
                        "    return np.vstack([x[0], x[1:3]])\n"));
  EXPECT_EQ(out_type(g), "f32[3, N]");
}

TEST(StaticErrors, ComprehensionVariablesDoNotLeak) {
  auto e =
      error_of(spec(std::string(kEntry) + "    ys = [x for k in range(2)]\n    return x * k\n"));
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.col, 16);
  EXPECT_HAS(e.message, "name 'k' is not defined");
}

TEST(StaticErrors, ComprehensionFilterOnAnArray) {
  auto e = error_of(
      spec(std::string(kEntry) + "    ys = [r for r in w if r.sum() > 0]\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 27);
  EXPECT_HAS(e.message, "length depend on the data");
  EXPECT_HAS(e.hint, "np.where");
}

TEST(StaticErrors, ComprehensionOverAnArrayOfSymbolicLength) {
  auto e = error_of(spec(std::string(kEntry) + "    ys = [r for r in x]\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 22);
  EXPECT_HAS(e.message, "cannot iterate a comprehension over an array");
}

TEST(StaticErrors, HstackOfANonList) {
  auto e = error_of(spec(std::string(kEntry) + "    return np.hstack(x)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "np.hstack takes a list or tuple of arrays");
}

// ---------------------------------------------------------------------------- dicts, kwargs

TEST(Static, KwargsFromADictAndFStringKeys) {
  auto g =
      compile(spec("def linear(x, w, b):\n"
                   "    return x @ w + b\n"
                   "def f(x: \"f32[M, N]\", w0: \"f32[N, N]\", w1: \"f32[N, N]\", b: \"f32[N]\") "
                   "-> \"f32[M, N]\":\n"
                   "    ws = {\"h.0.w\": w0, \"h.1.w\": w1}\n"
                   "    params = {k: v for k, v in ws.items() if k != 'skip'}\n"
                   "    for i in range(2):\n"
                   "        c = {\"w\": params[f\"h.{i}.w\"], \"b\": b}\n"
                   "        x = linear(x, **c)\n"
                   "    return x * params.get(\"scale\", 2.0) + len(params.keys())\n"));
  EXPECT_EQ(count(g, OpKind::Contract), 2);
  EXPECT_EQ(out_type(g), "f32[M, N]");
}

TEST(StaticErrors, KwargsMisuses) {
  const std::string helper = "def g(x, b=1.0):\n    return x + b\n";
  auto e = error_of(spec(helper + std::string(kEntry) + "    return g(x, **[1])\n"));
  EXPECT_EQ(e.line, 6);
  EXPECT_EQ(e.col, 17);
  EXPECT_HAS(e.message, "** needs a dict, not a list");
  e = error_of(spec(helper + std::string(kEntry) + "    return g(x, b=2.0, **{'b': 1.0})\n"));
  EXPECT_EQ(e.col, 24);
  EXPECT_HAS(e.message, "multiple values for keyword argument 'b'");
  e = error_of(spec(helper + std::string(kEntry) + "    return g(x, **{'c': 1.0})\n"));
  EXPECT_HAS(e.message, "unexpected keyword argument 'c'");
}

TEST(StaticErrors, DictComprehensionKeysAreStrings) {
  auto e = error_of(spec(std::string(kEntry) + "    d = {i: x for i in range(2)}\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 10);
  EXPECT_HAS(e.message, "dict keys must be strings");
}

TEST(StaticErrors, FStringOfASymbolicDim) {
  auto e =
      error_of(spec(std::string(kEntry) + "    d = {'a': x}\n    return d[f'{x.shape[0]}']\n"));
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.col, 17);
  EXPECT_HAS(e.message, "dim expression M");
}

// ---------------------------------------------------------------------------- scalar params

TEST(Static, ScalarEntryParametersAreHeldConstant) {
  auto g =
      compile(spec("def f(x: \"f32[T, D]\", n_head: int = 2, causal=True) -> \"f32[T, D]\":\n"
                   "    hs = np.split(x, n_head, axis=-1)\n"
                   "    return np.hstack([h * 2.0 for h in hs]) if causal else x\n"));
  ASSERT_EQ(g.params.size(), 1u);
  EXPECT_EQ(g.params[0].name, "x");
  EXPECT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(count(g, OpKind::Mul), 2);
}

TEST(StaticErrors, ScalarEntryParameterWithoutADefault) {
  auto e = error_of(spec("def f(x: \"f32[T, D]\", n_head: int) -> \"f32[T, D]\":\n    return x\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 31);
  EXPECT_HAS(e.message, "'n_head' is a Python value without a default");
  EXPECT_HAS(e.hint, "n: int = 12");
}

// ---------------------------------------------------------------------------- item assignment

TEST(Static, SliceAssignmentIsAFunctionalUpdate) {
  auto g = compile(
      "import numpy as np\nDIMS = dict(B=2, S=8, D=4)\n"
      "def f(cache: \"f32[B, S, D]\", xk: \"f32[B, 3, D]\") -> \"f32[B, S, D]\":\n"
      "    c = cache * 1.0\n"
      "    c[:, 2:5] = xk\n"
      "    c[0, -1] = 0.5\n"
      "    c[1, :2] += 1.0\n"
      "    return c\n");
  EXPECT_EQ(out_type(g), "f32[B, S, D]");
  EXPECT_GE(count(g, OpKind::Concat), 3);
  EXPECT_GE(count(g, OpKind::Slice), 4);
}

TEST(Static, ListAndDictItemAssignment) {
  auto g = compile(spec(std::string(kEntry) + "    parts = [x, x]\n"
                                              "    parts[1] = np.exp(x)\n"
                                              "    d = {}\n"
                                              "    d['k'] = parts[1]\n"
                                              "    return d['k'] + parts[0]\n"));
  EXPECT_EQ(count(g, OpKind::Exp), 1);
}

// numpy writes in place, so every name for the same array sees the write; a copy does not.
TEST(Static, ItemAssignmentIsSeenThroughAliasesNotCopies) {
  auto g = compile(spec(std::string(kEntry) + "    c = x * 1.0\n"
                                              "    alias = c\n"
                                              "    kept = c.copy()\n"
                                              "    c[0] = 0.0\n"
                                              "    return alias - kept\n"));
  const ir::Node& sub = g.node(g.outputs.at(0));
  ASSERT_EQ(sub.kind, OpKind::Sub);
  EXPECT_EQ(g.node(sub.operands[0]).kind, OpKind::Concat);  // alias sees the write
  EXPECT_EQ(g.node(sub.operands[1]).kind, OpKind::Mul);     // the copy does not
}

// A lambda reads the names of its scope when it is called, as Python does.
TEST(Static, LambdasBindLate) {
  auto g = compile(spec(std::string(kEntry) + "    fs = [lambda t: t * k for k in range(2, 5)]\n"
                                              "    s = 1.0\n"
                                              "    g = lambda t: t + s\n"
                                              "    s = 7.0\n"
                                              "    return g(fs[0](x))\n"));
  bool four = false, seven = false;
  for (auto& n : g.nodes) {
    four = four || (n.kind == OpKind::Const && n.const_value == 4.0);
    seven = seven || (n.kind == OpKind::Const && n.const_value == 7.0);
  }
  EXPECT_TRUE(four);
  EXPECT_TRUE(seven);
}

TEST(StaticErrors, ItemAssignmentMisuses) {
  auto e =
      error_of(spec(std::string(kEntry) + "    x[(x > 0).astype(np.int64)] = 0.0\n    return x\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "assignment through an array index depends on the data");
  EXPECT_HAS(e.hint, "np.where");
  e = error_of(spec(std::string(kEntry) + "    x[::2] = 0.0\n    return x\n"));
  EXPECT_HAS(e.message, "slice steps in an assignment target");
  e = error_of(spec(std::string(kEntry) + "    x.T[0] = 0.0\n    return x\n"));
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "item assignment into an expression");
  e = error_of(spec(std::string(kEntry) + "    x[0, 0, 0] = 0.0\n    return x\n"));
  EXPECT_HAS(e.message, "too many indices (3)");
  e = error_of(spec(std::string(kEntry) + "    top = x[:2].T\n    x[0] = 1.0\n    return top\n"));
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "'top' is a view of 'x' taken before this write");
  EXPECT_HAS(e.hint, "copy it");
  compile(spec(std::string(kEntry) + "    top = x[:2].copy()\n    x[0] = 1.0\n    return x\n"));
  e = error_of(spec(std::string(kEntry) + "    x[:, :2] = w\n    return x\n"));
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "cannot assign f32[3, N] into a region of shape [M, 2]");
}

// ---------------------------------------------------------------------------- call sites

TEST(StaticErrors, ErrorInAHelperNamesItsCallSite) {
  auto e =
      error_of(spec("def linear(x, w):\n"
                    "    return x @ w\n"
                    "def mha(x, w):\n"
                    "    y = linear(x, w.T)\n"
                    "    return linear(y, w.T)\n" +
                    std::string(kEntry) + "    return mha(x, w)\n"));
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 14);
  EXPECT_HAS(e.message, "matmul");
  EXPECT_HAS(e.message,
             "(in linear, called from mha at t.py:7:12; in mha, called from f at t.py:9:12)");
}

}  // namespace
}  // namespace ollie::spec
