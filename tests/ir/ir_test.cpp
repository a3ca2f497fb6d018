// Unit tests of the tensor IR: DimExpr algebra, Builder checks, invariants, text form, cost.
#include <gtest/gtest.h>

#include "ir/ir.h"

namespace ollie::ir {
namespace {

DimExpr C(int64_t v) { return DimExpr::constant(v); }
DimExpr S(const std::string& s) { return DimExpr::symbol(s); }

TEST(DimExpr, CanonicalFormMakesEqualExpressionsEqual) {
  EXPECT_EQ(S("M") * S("K"), S("K") * S("M"));
  EXPECT_EQ(S("M") + S("M"), C(2) * S("M"));
  EXPECT_EQ((S("M") + C(1)) - C(1), S("M"));
  EXPECT_NE(S("M"), S("N"));
  EXPECT_EQ((S("M") - S("M")).as_constant(), 0);
  EXPECT_EQ((C(3) * C(4)).as_constant(), 12);
}

TEST(DimExpr, TextIsStable) {
  EXPECT_EQ((S("B") * S("H") * S("S")).str(), "B*H*S");
  EXPECT_EQ((C(2) * S("D") + C(1)).str(), "2*D + 1");
  EXPECT_EQ((C(1) - S("D")).str(), "-D + 1");
  EXPECT_EQ(C(0).str(), "0");
  EXPECT_EQ(S("HD").floordiv(2).str(), "(HD//2)");
}

TEST(DimExpr, FloorDivSimplifiesWhenExact) {
  EXPECT_EQ((C(2) * S("D")).floordiv(2), S("D"));
  EXPECT_EQ((C(4) * S("D") + C(3)).floordiv(2), C(2) * S("D") + C(1));  // floor(3/2) = 1
  EXPECT_EQ(C(-3).floordiv(2).as_constant(), -2);                       // Python floor semantics
  EXPECT_EQ(S("HD").floordiv(2), S("HD").floordiv(2));
  EXPECT_NE(S("HD").floordiv(2), S("HD").floordiv(4));
  // A common factor of the numerator and the divisor cancels: the head size of a RoPE
  // reshape comes out as (8*X)//16 on one path and (2*X)//4 on another.
  const DimExpr x = S("D").floordiv(8);
  EXPECT_EQ((C(8) * x).floordiv(16), (C(2) * x).floordiv(4));
  EXPECT_EQ((C(8) * x).floordiv(16), x.floordiv(2));
  EXPECT_EQ((C(6) * S("D") + C(4)).floordiv(4), (C(3) * S("D") + C(2)).floordiv(2));
  EXPECT_EQ((C(3) * S("D")).floordiv(3), S("D"));
}

TEST(DimExpr, Evaluate) {
  DimBindings dims{{"HD", 7}, {"M", 3}};
  EXPECT_EQ(S("HD").floordiv(2).evaluate(dims), 3);
  EXPECT_EQ((S("M") * S("HD") + C(1)).evaluate(dims), 22);
  EXPECT_EQ(((S("HD") + C(1)).floordiv(2) * C(2)).evaluate(dims), 8);
  EXPECT_THROW(S("Q").evaluate(dims), UserError);
}

TEST(DimExpr, ExactDivForReshapeMinusOne) {
  DimExpr total = S("B") * S("H") * S("S") * S("HD");
  auto q = total.exact_div(S("B") * S("H") * S("S") * C(2));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(*q, S("HD").floordiv(2));
  EXPECT_EQ(*total.exact_div(S("H")), S("B") * S("S") * S("HD"));
  EXPECT_FALSE(total.exact_div(S("N")).has_value());           // N does not divide
  EXPECT_FALSE(total.exact_div(S("B") + S("H")).has_value());  // not a monomial
}

TEST(DimExpr, SymbolsLookThroughFloorDiv) {
  EXPECT_EQ((S("M") * S("HD").floordiv(2)).symbols(), (std::vector<std::string>{"HD", "M"}));
}

TEST(SliceAxis, LengthIsCeilOfSpanOverStep) {
  SliceAxis s{C(1), C(10), 3};  // 1, 4, 7
  EXPECT_EQ(s.length().as_constant(), 3);
  SliceAxis half{C(0), S("HD").floordiv(2), 1};
  EXPECT_EQ(half.length(), S("HD").floordiv(2));
}

// matmul + bias + relu, built by hand.
Graph small_graph() {
  Graph g;
  g.entry = "f";
  g.params = {{"a", DType::F32, {S("M"), S("K")}},
              {"b", DType::F32, {S("K"), S("N")}},
              {"bias", DType::F32, {S("N")}}};
  g.results = {{"out0", DType::F32, {S("M"), S("N")}}};
  g.dims = {"M", "K", "N"};
  g.bound_dims = {{"M", 4}, {"K", 8}, {"N", 2}};
  Builder b(g);
  ValueId a = b.input(0, "a", DType::F32, g.params[0].shape);
  ValueId w = b.input(1, "b", DType::F32, g.params[1].shape);
  ValueId bias = b.input(2, "bias", DType::F32, g.params[2].shape);
  g.inputs = {a, w, bias};
  ValueId mm = b.contract(a, w, {0, 1}, {1, 2}, {0, 2});
  ValueId bias2 = b.reshape(bias, {C(1), S("N")});
  ValueId biasb = b.broadcast(bias2, {S("M"), S("N")});
  ValueId sum = b.binary(OpKind::Add, mm, biasb);
  ValueId zero =
      b.broadcast(b.reshape(b.constant(0.0, DType::F32), {C(1), C(1)}), {S("M"), S("N")});
  ValueId relu = b.binary(OpKind::Max, sum, zero);
  g.outputs = {relu};
  return g;
}

TEST(Graph, WellFormedGraphHasNoProblems) {
  Graph g = small_graph();
  EXPECT_TRUE(check_invariants(g).empty());
  EXPECT_NO_THROW(verify(g));
}

TEST(Graph, TextFormIsStable) {
  Graph g = small_graph();
  EXPECT_EQ(to_text(g),
            "entry f(a: f32[M, K], b: f32[K, N], bias: f32[N]) -> (f32[M, N])\n"
            "dims M=4 K=8 N=2\n"
            "%0: f32[M, K] = input a\n"
            "%1: f32[K, N] = input b\n"
            "%2: f32[N] = input bias\n"
            "%3: f32[M, N] = contract %0, %1 (ab,bc->ac)\n"
            "%4: f32[1, N] = reshape %2\n"
            "%5: f32[M, N] = broadcast %4\n"
            "%6: f32[M, N] = add %3, %5\n"
            "%7: f32[] = const 0\n"
            "%8: f32[1, 1] = reshape %7\n"
            "%9: f32[M, N] = broadcast %8\n"
            "%10: f32[M, N] = max %6, %9\n"
            "return %10\n");
}

TEST(Graph, CostCountsContractionAndElementwise) {
  Graph g = small_graph();
  Cost c = cost(g);
  // contract 2*M*K*N = 128, add M*N = 8, max M*N = 8.
  EXPECT_EQ(c.flops, 128 + 8 + 8);
  // inputs (32 + 16 + 2) * 4 bytes, output 8 * 4 bytes.
  EXPECT_EQ(c.compulsory_bytes, (32 + 16 + 2 + 8) * 4);
}

TEST(Graph, InvariantCheckerFindsCorruption) {
  Graph g = small_graph();
  g.nodes[6].shape = {S("M"), S("K")};  // add with the wrong shape
  auto problems = check_invariants(g);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("%6 (add)"), std::string::npos) << problems[0];
  EXPECT_THROW(verify(g), InternalError);

  Graph h = small_graph();
  h.nodes[3].operands = {0, 5};  // operand that does not precede its user
  EXPECT_FALSE(check_invariants(h).empty());

  Graph k = small_graph();
  k.outputs = {3, 3};  // two outputs, one result
  EXPECT_FALSE(check_invariants(k).empty());
}

TEST(Builder, RejectsIllFormedOps) {
  Graph g = small_graph();
  Builder b(g);
  // Shapes differ.
  EXPECT_THROW(b.binary(OpKind::Add, 0, 1), InternalError);
  // Broadcast of a non-1 dim.
  EXPECT_THROW(b.broadcast(0, {S("M"), S("N")}), InternalError);
  // Reshape that changes the element count.
  EXPECT_THROW(b.reshape(0, {S("M")}), InternalError);
  // Contract whose label sizes disagree (K vs N).
  EXPECT_THROW(b.contract(0, 0, {0, 1}, {1, 0}, {0}), InternalError);
  // Transpose with a non-permutation.
  EXPECT_THROW(b.transpose(0, {0, 0}), InternalError);
  // Select with a non-bool condition.
  EXPECT_THROW(b.select(0, 0, 0), InternalError);
  // Transcendental of an int.
  ValueId i = b.iota({S("M")}, 0, DType::I64);
  EXPECT_THROW(b.unary(OpKind::Exp, i), InternalError);
}

TEST(Builder, ExpContractChecksItsLabelsAndPrints) {
  Graph g = small_graph();
  Builder b(g);
  // a[M, K] as scores, b[K, N] as values: out[M, N] = sum_k exp(a - max_k a) b.
  const ValueId o = b.exp_contract(0, 1, {0, 1}, {1, 2}, {0, 2}, false);
  EXPECT_EQ(shape_str(g.node(o).shape), "[M, N]");
  // One operand: the sum of the exponentials alone, over K.
  const ValueId l = b.exp_contract(0, -1, {0, 1}, {}, {0}, true);
  EXPECT_EQ(shape_str(g.node(l).shape), "[M]");
  EXPECT_EQ(g.node(l).operands.size(), 1u);
  const std::string text = to_text(g);
  EXPECT_NE(text.find("= exp_contract %0, %1 ("), std::string::npos) << text;
  EXPECT_NE(text.find(") base=2\n"), std::string::npos) << text;
  // Summing N, which does not index the scores: there is no max to shift by.
  EXPECT_THROW(b.exp_contract(0, 1, {0, 1}, {1, 2}, {0}, false), InternalError);
  // Integer scores.
  ValueId i = b.iota({S("M"), S("K")}, 0, DType::I64);
  EXPECT_THROW(b.exp_contract(i, -1, {0, 1}, {}, {0}, false), InternalError);
}

TEST(Builder, LayoutOpsInferShapes) {
  Graph g = small_graph();
  Builder b(g);
  ValueId t = b.transpose(0, {1, 0});
  EXPECT_EQ(g.node(t).shape, (Shape{S("K"), S("M")}));
  ValueId s = b.slice(0, {SliceAxis{C(0), S("M"), 2}, SliceAxis{C(1), S("K"), 1}});
  EXPECT_EQ(shape_str(g.node(s).shape), "[((M + 1)//2), K - 1]");
  ValueId c = b.concat({0, 0}, 1);
  EXPECT_EQ(g.node(c).shape, (Shape{S("M"), C(2) * S("K")}));
  ValueId r = b.reduce(ReduceKind::Sum, 0, {1});
  EXPECT_EQ(g.node(r).shape, (Shape{S("M")}));
  ValueId lt = b.binary(OpKind::Lt, 0, 0);
  EXPECT_EQ(g.node(lt).dtype, DType::Bool);
  EXPECT_TRUE(check_invariants(g).empty());
}

}  // namespace
}  // namespace ollie::ir
