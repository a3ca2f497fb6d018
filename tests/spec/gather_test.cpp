// Tests of data-dependent indexing (a gather): the forms a spec accepts (table[ids],
// table[:, ids], np.take, .take, np.arange as a slice) and the located errors for the rest.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "spec/spec.h"
#include "spec_test_util.h"

namespace ollie::spec {
namespace {

using namespace spec_tests;

using ir::OpKind;

std::string spec(const std::string& params, const std::string& ret, const std::string& body) {
  return "import numpy as np\nDIMS = dict(T=5, V=7, D=3, P=9)\n\ndef f(" + params + ") -> " + ret +
         ":\n    return " + body + "\n";
}
const char* kTable = "ids: \"i64[T]\", w: \"f32[V, D]\"";

const ir::Node& gather_of(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (n.kind == OpKind::Gather) return n;
  throw std::runtime_error("no gather");
}

TEST(Gather, IndexingTheFirstAxisIsAGatherOfTheInput) {
  for (const char* body : {"w[ids]", "w[ids, :]", "w[ids, ...]", "np.take(w, ids, axis=0)",
                           "w.take(ids, axis=0)", "np.take(w, ids, 0)"}) {
    auto g = compile(spec(kTable, "\"f32[T, D]\"", body));
    EXPECT_EQ(out_type(g), "f32[T, D]") << body;
    const ir::Node& n = gather_of(g);
    EXPECT_EQ(n.axis, 0) << body;
    EXPECT_EQ(g.node(n.operands[0]).kind, OpKind::Input) << body;
    EXPECT_EQ(g.node(n.operands[1]).name, "ids") << body;
  }
}

TEST(Gather, OtherAxesAndIndexShapes) {
  auto g = compile(spec("ids: \"i32[T]\", w: \"f32[D, V]\"", "\"f32[D, T]\"", "w[:, ids]"));
  EXPECT_EQ(gather_of(g).axis, 1);
  g = compile(spec("ids: \"i64[T, P]\", w: \"f32[V, D]\"", "\"f32[T, P, D]\"", "w[ids]"));
  EXPECT_EQ(out_type(g), "f32[T, P, D]");
  g = compile(spec("ids: \"i64[T]\", w: \"f32[D, V]\"", "\"f32[D, T]\"", "w[..., ids]"));
  EXPECT_EQ(gather_of(g).axis, 1);
  // axis=None takes from the flattened array.
  g = compile(spec(kTable, "\"f32[T]\"", "np.take(w, ids)"));
  EXPECT_EQ(ir::shape_str(g.node(gather_of(g).operands[0]).shape), "[D*V]");
  // Index arrays through layout ops and integer converts are still the input.
  g = compile(spec(kTable, "\"f32[T, D]\"", "w[ids.astype(np.int32).reshape(-1)]"));
  EXPECT_EQ(count(g, OpKind::Gather), 1);
}

TEST(Gather, AnArangeIndexIsASlice) {
  auto g = compile(spec(kTable + std::string(", p: \"f32[P, D]\""), "\"f32[T, D]\"",
                        "w[ids] + p[np.arange(len(ids))]"));
  EXPECT_EQ(count(g, OpKind::Gather), 1);
  EXPECT_EQ(count(g, OpKind::Slice), 1);
  // picoGPT's wpe[range(len(inputs))] is the same index as np.arange.
  g = compile(spec(kTable + std::string(", p: \"f32[P, D]\""), "\"f32[T, D]\"",
                   "w[ids] + p[range(len(ids))]"));
  EXPECT_EQ(count(g, OpKind::Slice), 1);
  g = compile(spec("p: \"f32[P, D]\"", "\"f32[2, D]\"", "p[range(2, 6, 3)]"));
  EXPECT_EQ(count(g, OpKind::Slice), 1);
  g = compile(spec("p: \"f32[P, D]\"", "\"f32[3, D]\"", "p[np.arange(1, 7, 2)]"));
  const ir::Node* s = nullptr;
  for (const auto& n : g.nodes)
    if (n.kind == OpKind::Slice) s = &n;
  ASSERT_TRUE(s);
  EXPECT_EQ(s->slices[0].start.str(), "1");
  EXPECT_EQ(s->slices[0].step, 2);
  EXPECT_EQ(s->slices[0].length().str(), "3");
}

TEST(Gather, TakeAlongAxisBroadcastsOffTheAxis) {
  auto g = compile(spec("ids: \"i64[T]\", x: \"f32[T, V]\"", "\"f32[T, 1]\"",
                        "np.take_along_axis(x, ids[:, None], axis=-1)"));
  const ir::Node& n = gather_of(g);
  EXPECT_TRUE(n.along);
  EXPECT_EQ(n.axis, 1);
  // A row of indices broadcast over the table's rows, and the table over the indices'.
  g = compile(spec("ids: \"i32[1, D]\", w: \"f32[V, D]\"", "\"f32[1, D]\"",
                   "np.take_along_axis(w, ids, 0)"));
  EXPECT_EQ(out_type(g), "f32[1, D]");
  g = compile(spec("ids: \"i64[T, D]\", w: \"f32[1, V]\"", "\"f32[T, D]\"",
                   "np.take_along_axis(w, ids, axis=1)"));
  EXPECT_EQ(out_type(g), "f32[T, D]");
  EXPECT_NE(ir::to_text(g).find("gather.along"), std::string::npos);
}

TEST(Gather, UnsupportedFormsAreLocatedErrorsNamingWhatIs) {
  struct Case {
    std::string params, body, message;
  };
  const std::vector<Case> cases = {
      {"x: \"f32[V, D]\"", "x[x[:, 0]]", "indexing with an array of f32"},
      {"x: \"f32[V, D]\", m: \"bool[V]\"", "x[m]", "boolean mask indexing"},
      {kTable, "w[ids, ids]", "several index arrays"},
      {kTable, "w[ids, 0]", "an index array combined with an int"},
      {kTable, "w[ids, 1:]", "an index array combined with a slice"},
      {kTable, "w[ids + 1]", "must be an integer input of the entry"},
      {kTable, "w[np.argmax(w, axis=0)]", "must be an integer input of the entry"},
      {kTable, "w[np.arange(8)]", "index 7 of the np.arange index is out of bounds"},
      {kTable, "w[np.arange(-2, 0)]", "an np.arange index with negative values"},
      {kTable, "np.take(w, ids, mode='wrap')", "mode other than 'raise'"},
      {kTable, "np.take(w, 3)", "indices must be an integer array"},
      {kTable, "np.take_along_axis(w, ids, axis=0)", "needs indices of the array's rank"},
      {kTable, "np.take_along_axis(w, ids[:, None] + 1, axis=0)", "must be an integer input"},
  };
  for (const auto& c : cases) {
    const Err e = error_of(spec(c.params, "\"f32[T, D]\"", c.body));
    EXPECT_EQ(e.line, 5) << c.body;
    EXPECT_EQ(e.col, 12) << c.body;
    EXPECT_HAS(e.message, c.message);
  }
  // range() out of the axis, as numpy's IndexError.
  const Err r = error_of(spec(kTable, "\"f32[8, D]\"", "w[range(8)]"));
  EXPECT_EQ(r.col, 12);
  EXPECT_HAS(r.message, "index 7 of the np.arange index is out of bounds for axis 0");
  // The hint names the supported forms.
  EXPECT_HAS(error_of(spec(kTable, "\"f32[T, D]\"", "w[ids, ids]")).hint, "np.take(table, ids");
}

}  // namespace
}  // namespace ollie::spec
