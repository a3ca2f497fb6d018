// Tests of the reference's gather (numpy take): rows picked by index with negative indices
// wrapped, any axis, bounds and values copied, and numpy's IndexError for an index outside
// [-V, V).
#include <gtest/gtest.h>

#include "interp/interp.h"
#include "support/error.h"
#include "test_graph.h"

namespace ollie::interp::testing {
namespace {

using ir::DType;

TEST(InterpGather, RowsByIndexWithNegativeIndicesWrapped) {
  TestGraph tg;
  const auto w = tg.in("w", DType::F32, S({3, 2}));
  const auto ids = tg.in("ids", DType::I64, S({5}));
  tg.out(tg.b.gather(w, ids, 0));
  const Result r = tg.run(
      {T(DType::F32, {3, 2}, {0, 1, 10, 11, 20, 21}), T(DType::I64, {5}, {0, -1, 2, -3, 1})});
  EXPECT_EQ(r.values[0].shape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(r.values[0].data, (std::vector<double>{0, 1, 20, 21, 20, 21, 0, 1, 10, 11}));
  EXPECT_EQ(r.bounds[0].data, std::vector<double>(10, 0.0));  // a copy of exact inputs
}

TEST(InterpGather, InnerAxisAndIndexArraysOfTwoDims) {
  TestGraph tg;
  const auto w = tg.in("w", DType::F32, S({2, 3}));
  const auto ids = tg.in("ids", DType::I32, S({2, 2}));
  tg.out(tg.b.gather(w, ids, 1));
  const Result r =
      tg.run({T(DType::F32, {2, 3}, {0, 1, 2, 10, 11, 12}), T(DType::I32, {2, 2}, {-1, 0, 1, -2})});
  EXPECT_EQ(r.values[0].shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(r.values[0].data, (std::vector<double>{2, 0, 1, 1, 12, 10, 11, 11}));
}

TEST(InterpGather, TakeAlongAxisPicksOneElementPerIndex) {
  TestGraph tg;
  const auto w = tg.in("w", DType::F32, S({2, 3}));
  const auto ids = tg.in("ids", DType::I64, S({2, 2}));
  tg.out(tg.b.gather_along(w, ids, 1));
  const Result r =
      tg.run({T(DType::F32, {2, 3}, {0, 1, 2, 10, 11, 12}), T(DType::I64, {2, 2}, {2, -3, -1, 1})});
  EXPECT_EQ(r.values[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r.values[0].data, (std::vector<double>{2, 0, 12, 11}));
}

TEST(InterpGather, BoundsFollowTheRowsTheyCopy) {
  TestGraph tg;
  const auto w = tg.in("w", DType::F32, S({3, 1}));
  const auto ids = tg.in("ids", DType::I64, S({3}));
  const auto scaled = tg.b.binary(ir::OpKind::Mul, w, tg.c(0.1, DType::F32, S({3, 1})));
  tg.out(scaled);
  tg.out(tg.b.gather(scaled, ids, 0));
  const Result r = tg.run({T(DType::F32, {3, 1}, {1, 1000, 0}), T(DType::I64, {3}, {1, -1, 0})});
  const auto& e = r.bounds[0].data;
  EXPECT_GT(e[1], e[0]);
  EXPECT_EQ(r.bounds[1].data, (std::vector<double>{e[1], e[2], e[0]}));
  EXPECT_EQ(r.values[1].data, (std::vector<double>{r.values[0].data[1], 0, r.values[0].data[0]}));
}

TEST(InterpGather, AnIndexOutsideMinusVToVRaisesAsNumpyDoes) {
  for (double bad : {3.0, -4.0, 1e6}) {
    TestGraph tg;
    const auto w = tg.in("w", DType::F32, S({3}));
    const auto ids = tg.in("ids", DType::I64, S({2}));
    tg.out(tg.b.gather(w, ids, 0));
    try {
      tg.run({T(DType::F32, {3}, {1, 2, 3}), T(DType::I64, {2}, {0, bad})});
      ADD_FAILURE() << "no error for index " << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("out of bounds for axis 0 with size 3"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(InterpGather, TextFormAndInvariants) {
  TestGraph tg;
  const auto w = tg.in("w", DType::F32, S({3, 2}));
  const auto ids = tg.in("ids", DType::I64, S({4}));
  tg.out(tg.b.gather(w, ids, 0));
  EXPECT_TRUE(ir::check_invariants(tg.g).empty());
  EXPECT_NE(ir::to_text(tg.g).find("%2: f32[4, 2] = gather %0, %1 axis=0"), std::string::npos)
      << ir::to_text(tg.g);
  tg.g.nodes.back().dtype = DType::F64;
  EXPECT_FALSE(ir::check_invariants(tg.g).empty());
}

}  // namespace
}  // namespace ollie::interp::testing
