// Tests of the loop-nest features the search's cost model reads (loops/features.h): every
// value pinned, worked out by hand, on a naive matmul, the same matmul under a register
// tile, and a softmax fused into one parallel row loop.
#include "loops/features.h"

#include <gtest/gtest.h>

#include "spec/spec.h"

namespace {

using namespace ollie::loops;

ollie::ir::Graph spec(const std::string& source) {
  return ollie::spec::compile_spec("test.py", "import numpy as np\n" + source, {});
}

const ollie::ir::Graph& matmul() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=12, K=16, N=64)\n"
      "def f(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[M, N]\":\n"
      "    return a @ b\n");
  return g;
}

const ollie::ir::Graph& softmax() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=4, N=32)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
      "    return e / e.sum(axis=-1, keepdims=True)\n");
  return g;
}

KernelFeatures features(const ollie::ir::Graph& g, const std::string& schedule) {
  return kernel_features(lower(g, parse_schedule(schedule)), g.bound_dims);
}

// The levels' loops, trips, flops and bytes, outermost first.
void expect_levels(const StoreFeatures& s, const std::vector<std::string>& loops,
                   const std::vector<int64_t>& trips, const std::vector<double>& flops,
                   const std::vector<double>& bytes) {
  ASSERT_EQ(s.levels.size(), loops.size()) << s.buffer;
  for (size_t i = 0; i < loops.size(); ++i) {
    EXPECT_EQ(s.levels[i].loop, loops[i]) << s.buffer << " level " << i;
    EXPECT_EQ(s.levels[i].trip, trips[i]) << s.buffer << " level " << i;
    EXPECT_DOUBLE_EQ(s.levels[i].flops, flops[i]) << s.buffer << " level " << i;
    EXPECT_DOUBLE_EQ(s.levels[i].bytes, bytes[i]) << s.buffer << " level " << i;
  }
}

TEST(Features, NaiveMatmul) {
  // for m, for n: out0 = 0; for k reduce: out0 += a[m, k] * b[k, n]
  const KernelFeatures f = features(matmul(), "");
  ASSERT_EQ(f.stores.size(), 2u);
  const StoreFeatures& init = f.stores[0];
  EXPECT_EQ(init.buffer, "out0");
  expect_levels(init, {"m", "n", ""}, {12, 64, 1}, {0, 0, 0}, {3072, 256, 4});
  EXPECT_EQ(init.executions, 768);
  EXPECT_EQ(init.accessed_bytes, 3072);
  EXPECT_EQ(init.reuse_bytes, 0);  // it loads nothing
  const StoreFeatures& s = f.stores[1];
  // Footprints at each level: out0 (m, n), a (m, k), b (k, n), 4 bytes each.
  expect_levels(s, {"m", "n", "k", ""}, {12, 64, 16, 1}, {24576, 2048, 32, 2},
                {4 * (768 + 192 + 1024), 4 * (64 + 16 + 1024), 4 * (1 + 16 + 16), 12});
  EXPECT_EQ(s.executions, 12288);
  EXPECT_EQ(s.flops, 24576);
  EXPECT_EQ(s.bytes, 7936);
  EXPECT_EQ(s.accessed_bytes, 4 * 4 * 12288);  // out0 loaded and stored, a, b
  EXPECT_EQ(s.vector_lanes, 0);
  EXPECT_EQ(s.innermost_trip, 16);
  EXPECT_EQ(s.accumulator_elements, 0);  // out0 is not a local array
  // b[k, n] is reused across m: one m iteration touches all of b, a row of a and of out0.
  EXPECT_EQ(s.reuse_bytes, 4416);
  EXPECT_EQ(s.parallel_extent, 0);
  EXPECT_EQ(s.unrolled_loops, 0);
  EXPECT_EQ(s.unroll_factor, 1);
  EXPECT_EQ(f.flops, 24576);
  EXPECT_EQ(f.bytes, 3072 + 7936);
  EXPECT_EQ(f.accessed_bytes, 3072 + 196608);
  EXPECT_EQ(f.accumulator_elements, 0);
  EXPECT_EQ(f.local_bytes, 0);
  EXPECT_EQ(f.parallel_regions, 0);
  EXPECT_EQ(f.vectorized_loops, 0);
  EXPECT_EQ(f.unrolled_loops, 0);
  EXPECT_EQ(f.parallel_loops, 0);
}

TEST(Features, MatmulUnderARegisterTile) {
  // parallel m_o (2), n_o (4), out0_acc[96]; full tiles (the fast path):
  //   acc = 0 (vectorized 96); for k: unrolled m_i (6): vectorized n_i (16): acc += a * b;
  //   m_i, vectorized n_i: out0 = acc
  const KernelFeatures f = features(matmul(),
                                    "split out0 m 6\nsplit out0 n 16\n"
                                    "reorder out0 m_o n_o k m_i n_i\naccumulate out0 n_o\n"
                                    "vectorize out0 n_i\nunroll out0 m_i\nparallel out0 m_o\n");
  ASSERT_EQ(f.stores.size(), 3u);
  const StoreFeatures& init = f.stores[0];
  EXPECT_EQ(init.buffer, "out0_acc");
  expect_levels(init, {"m_o", "n_o", "a_2", ""}, {2, 4, 96, 1}, {0, 0, 0, 0}, {384, 384, 384, 4});
  EXPECT_EQ(init.vector_lanes, 96);
  EXPECT_EQ(init.parallel_extent, 2);
  EXPECT_EQ(init.accumulator_elements, 0);  // set, not accumulated

  const StoreFeatures& s = f.stores[1];
  EXPECT_EQ(s.buffer, "out0_acc");
  // acc (m_i, n_i), a (m_o, m_i, k), b (k, n_o, n_i), 4 bytes each.
  expect_levels(s, {"m_o", "n_o", "k", "m_i", "n_i", ""}, {2, 4, 16, 6, 16, 1},
                {24576, 12288, 3072, 192, 32, 2},
                {4 * (96 + 192 + 1024), 4 * (96 + 96 + 1024), 4 * (96 + 96 + 256),
                 4 * (96 + 6 + 16), 4 * (16 + 1 + 16), 12});
  EXPECT_EQ(s.executions, 12288);
  EXPECT_EQ(s.flops, 24576);
  EXPECT_EQ(s.accessed_bytes, 4 * 4 * 12288);
  EXPECT_EQ(s.vector_lanes, 16);
  EXPECT_EQ(s.innermost_trip, 16);
  EXPECT_EQ(s.accumulator_elements, 96);
  // The accumulators are reused across k: one k iteration touches the tile, a column of
  // 6 of a and a row of 16 of b. (b is reused across m_i at 132 bytes, a across n_i at 12.)
  EXPECT_EQ(s.reuse_bytes, 472);
  EXPECT_EQ(s.parallel_extent, 2);
  EXPECT_EQ(s.unrolled_loops, 1);
  EXPECT_EQ(s.unroll_factor, 6);

  const StoreFeatures& out = f.stores[2];
  EXPECT_EQ(out.buffer, "out0");
  expect_levels(out, {"m_o", "n_o", "m_i", "n_i", ""}, {2, 4, 6, 16, 1}, {0, 0, 0, 0, 0},
                {4 * (768 + 96), 4 * (384 + 96), 4 * (96 + 96), 4 * (16 + 16), 8});
  EXPECT_EQ(out.accessed_bytes, 2 * 4 * 768);
  EXPECT_EQ(out.reuse_bytes, 768);  // the tile is read again for the next n_o
  EXPECT_EQ(out.accumulator_elements, 0);
  EXPECT_EQ(out.unrolled_loops, 0);

  EXPECT_EQ(f.flops, 24576);
  EXPECT_EQ(f.bytes, 384 + 5248 + 3456);
  EXPECT_EQ(f.accessed_bytes, 3072 + 196608 + 6144);
  EXPECT_EQ(f.accumulator_elements, 96);
  EXPECT_EQ(f.local_bytes, 384);
  EXPECT_EQ(f.parallel_regions, 1);
  EXPECT_EQ(f.vectorized_loops, 3);  // the fast path's: the else branch is not counted
  EXPECT_EQ(f.unrolled_loops, 1);
  EXPECT_EQ(f.parallel_loops, 1);
}

TEST(Features, SoftmaxFusedIntoOneParallelRowLoop) {
  // parallel m (4): t1 = -inf; n: t1 = max(t1, x); n: t5 = exp(x - t1); t6 = 0;
  //   n: t6 += t5; vectorized n: out0 = t5 / t6   (t1, t6: f32[1], t5: f32[N] locals)
  const KernelFeatures f =
      features(softmax(),
               "compute_at t6 out0 m\ncompute_at t5 out0 m\ncompute_at t1 out0 m\n"
               "parallel out0 m\nvectorize out0 n\n");
  ASSERT_EQ(f.stores.size(), 6u);
  const std::vector<std::string> buffers = {"t1", "t1", "t5", "t6", "t6", "out0"};
  for (size_t i = 0; i < buffers.size(); ++i) EXPECT_EQ(f.stores[i].buffer, buffers[i]) << i;
  expect_levels(f.stores[0], {"m", ""}, {4, 1}, {0, 0}, {4, 4});
  expect_levels(f.stores[1], {"m", "n", ""}, {4, 32, 1}, {128, 32, 1}, {516, 132, 8});
  expect_levels(f.stores[2], {"m", "n", ""}, {4, 32, 1}, {256, 64, 2}, {644, 260, 12});
  expect_levels(f.stores[4], {"m", "n", ""}, {4, 32, 1}, {128, 32, 1}, {132, 132, 8});
  expect_levels(f.stores[5], {"m", "n", ""}, {4, 32, 1}, {128, 32, 1}, {644, 260, 12});
  // The row max and sum accumulate into one-element local arrays.
  const std::vector<int64_t> accumulators = {0, 1, 0, 0, 1, 0};
  // Reuse: t1 across n (8 bytes between uses), t1 across n (12), t5 across m (132: the
  // row of t5 and t6), t5 across m (260: a row of out0, of t5, and t6).
  const std::vector<double> reuse = {0, 8, 12, 0, 132, 260};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(f.stores[i].accumulator_elements, accumulators[i]) << i;
    EXPECT_EQ(f.stores[i].reuse_bytes, reuse[i]) << i;
    EXPECT_EQ(f.stores[i].parallel_extent, 4) << i;
    EXPECT_EQ(f.stores[i].vector_lanes, i == 5 ? 32 : 0) << i;
    EXPECT_EQ(f.stores[i].innermost_trip, i == 0 || i == 3 ? 4 : 32) << i;
  }
  EXPECT_EQ(f.stores[1].accessed_bytes, 3 * 4 * 128);
  EXPECT_EQ(f.flops, 128 + 256 + 128 + 128);
  EXPECT_EQ(f.bytes, 4 + 516 + 644 + 4 + 132 + 644);
  EXPECT_EQ(f.accessed_bytes, 16 + 4 * 1536 + 16);
  EXPECT_EQ(f.accumulator_elements, 2);
  EXPECT_EQ(f.local_bytes, 4 + 128 + 4);
  EXPECT_EQ(f.parallel_regions, 1);
  EXPECT_EQ(f.vectorized_loops, 1);
  EXPECT_EQ(f.parallel_loops, 1);
}

TEST(Features, AParallelLoopInsideASerialOneIsEnteredOncePerIteration) {
  const KernelFeatures f = features(matmul(), "reorder out0 k m n\nparallel out0 m\n");
  // for k (serial, 16) reduce: parallel for m: ... — entered 16 times per call.
  EXPECT_EQ(f.parallel_regions, 16);
}

}  // namespace
