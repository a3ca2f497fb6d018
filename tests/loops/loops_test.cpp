// Tests of the loop-nest IR: make functions reject ill-typed nodes, and lowering's text
// form is pinned for matmul (golden) and checked for its loop kinds elsewhere.
#include "loops/loops.h"

#include <gtest/gtest.h>

#include "loops/proposals.h"
#include "rewrite/rewrite.h"
#include "spec/spec.h"

namespace {

using namespace ollie::loops;
using ollie::InternalError;
using ollie::ir::DType;
using ollie::ir::OpKind;

ollie::ir::Graph spec(const std::string& source) {
  return ollie::spec::compile_spec("test.py", "import numpy as np\n" + source, {});
}

TEST(LoopsIR, MakeRejectsIllTypedNodes) {
  Expr f = make_float(1.0, DType::F32);
  Expr d = make_float(1.0, DType::F64);
  Expr i = make_var("i");
  EXPECT_THROW(make_binary(OpKind::Add, f, d), InternalError);  // dtype mismatch
  EXPECT_THROW(make_binary(OpKind::Exp, f, f), InternalError);  // not a binary op
  EXPECT_THROW(make_binary(OpKind::And, f, f), InternalError);  // And of floats
  EXPECT_THROW(make_unary(OpKind::Not, f), InternalError);      // Not of a float
  EXPECT_THROW(make_load("a", DType::F32, f), InternalError);   // float index
  EXPECT_THROW(make_store("a", d, f), InternalError);           // float index
  EXPECT_THROW(make_select(f, f, f), InternalError);            // non-bool condition
  EXPECT_THROW(make_select(make_binary(OpKind::Lt, f, f), f, d), InternalError);
  EXPECT_THROW(make_call("exp", {i}), InternalError);  // exp of an integer
  EXPECT_THROW(make_call("frobnicate", {f}), InternalError);
  EXPECT_THROW(make_call("pow", {f}), InternalError);  // arity
  EXPECT_THROW(make_int(1, DType::F32), InternalError);
  EXPECT_THROW(make_float(1, DType::I32), InternalError);
  Stmt body = make_store("a", i, f);
  EXPECT_THROW(make_for("i", make_int(0), make_int(4), ForKind::Parallel, body, /*reduction=*/true),
               InternalError);
  EXPECT_THROW(make_for("i", make_int(0), f, ForKind::Serial, body), InternalError);
  EXPECT_THROW(make_allocate("t", DType::F32, f, body), InternalError);
}

TEST(LoopsIR, MakeTypesAndFoldsIndexArithmetic) {
  Expr f = make_float(1.0, DType::F32);
  EXPECT_EQ(make_binary(OpKind::Lt, f, f)->dtype, DType::Bool);
  Expr i = make_var("i");
  EXPECT_EQ(make_binary(OpKind::Add, make_int(0), i), i);
  EXPECT_EQ(make_binary(OpKind::Mul, i, make_int(1)), i);
  EXPECT_EQ(to_text(make_binary(OpKind::Mul, make_int(3), make_int(4))), "12");
  EXPECT_EQ(make_cast(DType::F32, f), f);
  EXPECT_EQ(make_dim(ollie::ir::DimExpr::constant(7))->kind, ExprKind::IntImm);
  EXPECT_EQ(to_text(make_binary(OpKind::Max, f, make_float(-1.5, DType::F32))),
            "max(f32(1), f32(-1.5))");
}

// mla_decode at B = 1: the root nest of the fused scores and softmax has no loop worth
// running in parallel before its h loop (b runs once), so the scores contractions computed
// in it outside that loop (the two products sharing the token loop, sibling fusion) run
// their own outermost pure loop in parallel (before, the whole attention ran on one core); o_lat =
// p . c_kv (16 x 512 outputs, 4096 keys) runs split-K: partial results over 64-key slices in
// parallel with register tiles, then their sum; the 512-long score dots run as lane tiles
// (q_lat copied transposed, the 16 heads one vector against a broadcast c_kv element, 8
// tokens at a time), as do the rope scores, the scores computed at the rope scores' token
// tiles, which run in parallel.
TEST(LoopsDefault, ARootNestThatRunsOnceSharesItsWorkInside) {
  const auto g =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py", {});
  ASSERT_EQ(g.bound_dims.at("B"), 1);
  const std::string text = to_text(default_schedule(g, Target{64, 2}));
  for (const char* line :
       {"compute_at t8 t22 b\n", "compute_at t7 t8 h_o\n", "parallel t8 s_o\n", "parallel t22 h\n",
        "split t23 s 64\n", "rfactor t23 s_o\n", "accumulate t23_rf l_o\n", "parallel t23_rf s_o\n",
        "vectorize t23 l\n", "pack t7 t6 root transposed\n", "split t7 s 8\n", "split t7 h 16\n",
        "reorder t7 b s_o h_o l s_i h_i\n", "accumulate t7 h_o\n", "vectorize t7 h_i\n",
        "unroll t7 s_i\n", "pack t8 q_pe root transposed\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  EXPECT_EQ(text.find("parallel t23_rf s_o\nparallel t23_rf s_o\n"), std::string::npos) << text;
  // Within one core nothing runs in parallel.
  EXPECT_EQ(to_text(default_schedule(g, Target{64, 1})).find("parallel"), std::string::npos);
  // At B = 4 the root's b loop runs in parallel, nothing inside it does, and o_lat's
  // output (4 x 16 x 512) is too big beside its 4096 keys to split.
  ollie::spec::SpecOptions four;
  four.dim_overrides["B"] = 4;
  const auto g4 =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py", four);
  const std::string text4 = to_text(default_schedule(g4, Target{64, 2}));
  EXPECT_NE(text4.find("parallel t23 b\n"), std::string::npos) << text4;
  EXPECT_EQ(text4.find("parallel t7 "), std::string::npos) << text4;
  EXPECT_EQ(text4.find("parallel t8 "), std::string::npos) << text4;
  EXPECT_EQ(text4.find("rfactor t23"), std::string::npos) << text4;
  // Short score dots (attention_causal's 64-long head dim) keep one accumulator.
  const auto att =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/attention_causal.py", {});
  EXPECT_EQ(to_text(default_schedule(att, Target{64, 2})).find("vectorize t4 d\n"),
            std::string::npos);
}

// A GEMM whose streamed operand does not fit in L2 reads it as packed panels: the column
// loop outside the rows, b's panel (every k by 32 columns) copied at it, the column
// panels in parallel. Not when b fits (matmul's 512 KiB, or gemm with an 8 MiB L2), and
// not with too few row tiles to reuse a panel.
TEST(LoopsDefault, AGemmStreamingMoreThanL2PacksPanelsOfIt) {
  const std::string path = std::string(OLLIE_SOURCE_DIR) + "/examples/gemm.py";
  const auto gemm = ollie::spec::load_spec(path, {});
  const std::string text = to_text(default_schedule(gemm, Target{64, 2}));
  EXPECT_NE(text.find("split out0 m 6\nsplit out0 n 32\nreorder out0 n_o m_o k m_i n_i\n"
                      "pack out0 b n_o\naccumulate out0 m_o\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("parallel out0 n_o\n"), std::string::npos) << text;
  const std::string big_l2 = to_text(default_schedule(gemm, Target{64, 2, 32 * 1024, 8 << 20}));
  EXPECT_EQ(big_l2.find("pack"), std::string::npos) << big_l2;
  EXPECT_NE(big_l2.find("reorder out0 m_o n_o k m_i n_i\n"), std::string::npos) << big_l2;
  const auto matmul =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/matmul.py", {});
  EXPECT_EQ(to_text(default_schedule(matmul, Target{64, 2})).find("pack"), std::string::npos);
  ollie::spec::SpecOptions few_rows;
  few_rows.dim_overrides["M"] = 24;
  const auto short_gemm = ollie::spec::load_spec(path, few_rows);
  EXPECT_EQ(to_text(default_schedule(short_gemm, Target{64, 2})).find("pack"), std::string::npos);
}

// A GEMM whose streamed operand fills more than half of L2 but cannot be packed (mha's
// projections read w[DM, H, HD] through a reshape) sweeps the rows inside each column of
// tiles, so that a column's strip of w is reused from cache; the columns are the parallel
// loop. Not for matmul's b (half of L2), nor with a bigger L2.
TEST(LoopsDefault, AProjectionStreamingMoreThanHalfOfL2SweepsRowsInsideColumns) {
  const auto mha =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/mha_causal.py", {});
  const std::string text = to_text(default_schedule(mha, Target{64, 2}));
  EXPECT_NE(text.find("split t6 s 6\nsplit t6 i 32\nreorder t6 i_o s_o dm s_i i_i\n"
                      "accumulate t6 s_o\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("parallel t6 i_o\n"), std::string::npos) << text;
  const std::string big_l2 = to_text(default_schedule(mha, Target{64, 2, 32 * 1024, 4 << 20}));
  EXPECT_NE(big_l2.find("reorder t6 s_o i_o dm s_i i_i\n"), std::string::npos) << big_l2;
  const auto matmul =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/matmul.py", {});
  EXPECT_NE(to_text(default_schedule(matmul, Target{64, 2})).find("reorder out0 m_o n_o k"),
            std::string::npos);
}

// A contraction whose rows do not index its big operand takes a full tile instead of
// sinking the rows inside the reduction when the operand's slice swept per row of tiles
// fits in half of L2 (gpt2_block's projections); not when the rows to sink run once
// (mla_decode's q_lat at B = 1). The tile's rows are a loop that reuses the operand: in
// mla_decode's flash graph, the partial output o_b[h, i, l] of key block i tiles the
// heads, not the blocks.
TEST(LoopsDefault, TilesOverSunkRowsWhenTheSweptSliceFitsInL2) {
  const std::string dir = std::string(OLLIE_SOURCE_DIR) + "/examples/";
  const auto gpt2 = ollie::spec::load_spec(dir + "gpt2_block.py", {});
  const std::string text = to_text(default_schedule(gpt2, Target{64, 2}));
  EXPECT_NE(text.find("reorder t53 t_o d_o d1 t_i d_i\naccumulate t53 d_o\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("reorder t53 d1 t d\n"), std::string::npos) << text;
  // With a 64 KiB L2 the slice does not fit: the rows sink as before.
  const std::string small_l2 = to_text(default_schedule(gpt2, Target{64, 2, 32 * 1024, 64 << 10}));
  EXPECT_NE(small_l2.find("reorder t53 d1 t d\n"), std::string::npos) << small_l2;
  const auto mla = ollie::spec::load_spec(dir + "mla_decode.py", {});
  EXPECT_NE(to_text(default_schedule(mla, Target{64, 2})).find("reorder t6 h dn b l\n"),
            std::string::npos);
  const auto flash =
      ollie::rewrite::replay(mla, "exp2 %18\nnormalize-late %23 lhs\nflash %25 256\n");
  const std::string flash_text = to_text(default_schedule(flash, Target{64, 2}));
  // 8 rows: two full tiles over the 16 heads (6 + 6 + 4 would leave a partial one); 4 with
  // 16 vector registers (AVX2), whose 8 x 2 accumulators would spill.
  EXPECT_NE(flash_text.find("split t33 h 8\nsplit t33 l 32\nreorder t33 b i h_o l_o i1 h_i l_i\n"),
            std::string::npos)
      << flash_text;
  const std::string avx2_text = to_text(default_schedule(flash, Target{32, 2}));
  EXPECT_NE(avx2_text.find("split t33 h 4\nsplit t33 l 16\n"), std::string::npos) << avx2_text;
}

// Lane tiles: mla_decode's flash scores q_lat[h, l] . c_kv[s, l] read a transposed copy of
// q_lat, the 16 heads one vector (two with 32-byte vectors) against a broadcast c_kv
// element, 8 keys at a time; gqa_decode's 4 query heads per group are too few lanes, so its
// scores keep the dot tile.
TEST(LoopsDefault, ShortHeadLoopsAreTheLanesOfDecodeScores) {
  const std::string dir = std::string(OLLIE_SOURCE_DIR) + "/examples/";
  const auto mla = ollie::spec::load_spec(dir + "mla_decode.py", {});
  const auto flash = ollie::rewrite::replay(mla, "normalize-late %23 lhs\nflash %25 256\n");
  const std::string text = to_text(default_schedule(flash, Target{64, 2}));
  EXPECT_NE(text.find("pack t11 t6 root transposed\nsplit t11 i1 8\nsplit t11 h 16\n"
                      "reorder t11 b i i1_o h_o l i1_i h_i\naccumulate t11 h_o\n"
                      "vectorize t11 h_i\nunroll t11 i1_i\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("compute_at t11 t33 i\n"), std::string::npos) << text;
  const std::string avx2 = to_text(default_schedule(flash, Target{32, 2}));
  EXPECT_NE(avx2.find("pack t11 t6 root transposed\n"), std::string::npos) << avx2;
  const auto gqa = ollie::spec::load_spec(dir + "gqa_decode.py", {});
  EXPECT_EQ(to_text(default_schedule(gqa, Target{64, 2})).find("root transposed"),
            std::string::npos);
}

// A full tile's rows divide a short row loop where 6 does not: 8 (or 4 without 32 vector
// registers); a long row loop keeps 6 rows (its partial tile is a small share).
TEST(LoopsDefault, AFullTilesRowsDivideAShortRowLoop) {
  const std::string path = std::string(OLLIE_SOURCE_DIR) + "/examples/matmul.py";
  auto rows_of = [&](int64_t m, int vector_bytes) {
    ollie::spec::SpecOptions o;
    o.dim_overrides["M"] = m;
    const std::string text =
        to_text(default_schedule(ollie::spec::load_spec(path, o), Target{vector_bytes, 2}));
    const size_t at = text.find("split out0 m ");
    return at == std::string::npos ? std::string("none")
                                   : text.substr(at + 13, text.find('\n', at) - at - 13);
  };
  EXPECT_EQ(rows_of(16, 64), "8");
  EXPECT_EQ(rows_of(16, 32), "4");
  EXPECT_EQ(rows_of(24, 64), "6");
  EXPECT_EQ(rows_of(20, 64), "4");
  EXPECT_EQ(rows_of(256, 64), "6");
}

// Block fusion: in mla_decode's flash graph every stage of a key block (scores, max,
// exponentials, sum) is computed under the partial output's block loop, which runs in
// parallel; with one core there is no plan (nothing to share out), and the plain graph
// (no loop of blocks outside a tile) gets none.
TEST(LoopsDefault, FlashBlocksAreComputedUnderTheirPartialOutputsBlockLoop) {
  const std::string dir = std::string(OLLIE_SOURCE_DIR) + "/examples/";
  const auto mla = ollie::spec::load_spec(dir + "mla_decode.py", {});
  const auto flash =
      ollie::rewrite::replay(mla, "exp2 %18\nnormalize-late %23 lhs\nflash %25 256\n");
  const auto plan = block_plan(flash, build_stages(flash, {}), Target{64, 2});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->host, "t33");
  EXPECT_EQ(plan->loop, "i");
  EXPECT_EQ(plan->prefix, (std::vector<std::string>{"b", "i"}));
  const std::string text = to_text(default_schedule(flash, Target{64, 2}));
  for (const char* line : {"reorder t18 b i h i1\n", "compute_at t32 t33 i\n",
                           "compute_at t31 t33 i\n", "compute_at t18 t33 i\n",
                           "compute_at t14 t33 i\n", "compute_at t11 t33 i\n", "parallel t33 i\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  EXPECT_EQ(to_text(default_schedule(flash, Target{64, 1})).find("compute_at t31 t33 i"),
            std::string::npos);
  EXPECT_FALSE(block_plan(mla, build_stages(mla, {}), Target{64, 2}).has_value());
}

// swiglu_mlp's down projection (w_down: 2 MiB) gets a register tile although the gate
// could be fused into its rows; attention's P . V keeps the fused softmax (its row max and
// sum are reductions), so its tile spans a block of 4 rows, split alike in the stages fused.
TEST(LoopsDefault, ABigContractionTakesATileOverAFusedElementwiseProducer) {
  const auto sw =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/swiglu_mlp.py", {});
  const std::string text = to_text(default_schedule(sw, Target{64, 2}));
  EXPECT_NE(text.find("accumulate out0 t_o\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("compute_at t13 out0"), std::string::npos) << text;
  // Small: the fused gate stays (w_down 128 x 64 floats, 32 KiB).
  ollie::spec::SpecOptions small;
  small.dim_overrides = {{"T", 64}, {"D", 64}, {"F", 128}};
  const auto sw_small =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/swiglu_mlp.py", small);
  EXPECT_NE(to_text(default_schedule(sw_small, Target{64, 2})).find("compute_at t13 out0"),
            std::string::npos);
  const auto att =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/attention_causal.py", {});
  const std::string att_text = to_text(default_schedule(att, Target{64, 2}));
  EXPECT_NE(att_text.find("split out0 s 4\nsplit out0 d 64\nreorder out0 s_o d_o s1 s_i d_i\n"
                          "accumulate out0 d_o\n"),
            std::string::npos)
      << att_text;
  EXPECT_NE(att_text.find("compute_at t35 out0 s_o\n"), std::string::npos) << att_text;
}

// The scores q . k^T (both contiguous along d) read a transposed copy of k made once per
// call, and become an outer-product tile along the keys over a block of 4 query rows;
// a decode step's scores (16 heads against the cache: little reuse) never copy the cache;
// they copy the small q_lat instead, for a lane tile (ShortHeadLoopsAreTheLanesOfDecodeScores).
TEST(LoopsDefault, DotShapedScoresReadATransposedCopyWhereItIsReused) {
  const auto att =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/attention_causal.py", {});
  const std::string text = to_text(default_schedule(att, Target{64, 2}));
  EXPECT_NE(text.find("pack t4 k root transposed\nsplit t4 s 4\nsplit t4 s1 64\n"
                      "reorder t4 s_o s1_o d s_i s1_i\naccumulate t4 s1_o\nvectorize t4 s1_i\n"
                      "unroll t4 s_i\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("compute_at t4 out0 s_o\n"), std::string::npos) << text;
  const auto mla =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py", {});
  const std::string mla_text = to_text(default_schedule(mla, Target{64, 2}));
  EXPECT_EQ(mla_text.find("pack t7 c_kv"), std::string::npos) << mla_text;
  EXPECT_NE(mla_text.find("pack t7 t6 root transposed\n"), std::string::npos) << mla_text;
}

// Attention's P . V hosts the fused softmax at its query rows: the rows run in blocks of
// 4, split alike in the host and in every stage computed there (the score contraction,
// the mask, the row max and its partials, exp, the row sum, the division), the
// contractions get register tiles spanning the 4 rows, and the stages are computed at the
// outer row loop. Fewer than 8 query rows, or a decode step (one query), keep rows whole.
TEST(LoopsDefault, FusedAttentionRunsOnBlocksOfQueryRows) {
  const std::string dir = std::string(OLLIE_SOURCE_DIR) + "/examples/";
  const auto att = ollie::spec::load_spec(dir + "attention_causal.py", {});
  const auto blocks = row_blocks(att, Target{64, 2});
  const std::map<std::string, size_t> want = {{"t4", 0},  {"t26", 0}, {"t27", 0}, {"t31", 0},
                                              {"t32", 0}, {"t35", 0}, {"out0", 0}};
  EXPECT_EQ(blocks, want);
  const std::string text = to_text(default_schedule(att, Target{64, 2}));
  for (const auto& [name, loop] : want) {
    EXPECT_NE(text.find("split " + name + " s 4\n"), std::string::npos) << name << "\n" << text;
    // The scores and the division at the block; the rest row by row inside the division.
    if (name != "out0") {
      const std::string at = name == "t4" || name == "t35" ? " out0 s_o\n" : " t35 s_i\n";
      EXPECT_NE(text.find("compute_at " + name + at), std::string::npos) << name << "\n" << text;
    }
  }
  EXPECT_NE(text.find("reorder out0 s_o d_o s1 s_i d_i\naccumulate out0 d_o\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("unroll out0 s_i\n"), std::string::npos) << text;
  EXPECT_NE(text.find("parallel out0 s_o\n"), std::string::npos) << text;
  // Multi-head: the rows are the loop after the heads.
  const auto mha = ollie::spec::load_spec(dir + "mha_causal.py", {});
  const auto mha_blocks = row_blocks(mha, Target{64, 2});
  ASSERT_TRUE(mha_blocks.count("t58")) << to_text(default_schedule(mha, Target{64, 2}));
  EXPECT_EQ(mha_blocks.at("t58"), 1u);
  EXPECT_GE(mha_blocks.size(), 7u);
  // Too few rows for two blocks.
  ollie::spec::SpecOptions short_rows;
  short_rows.dim_overrides = {{"S", 6}};
  EXPECT_TRUE(
      row_blocks(ollie::spec::load_spec(dir + "attention_causal.py", short_rows), Target{64, 2})
          .empty());
  // Decode steps: one query per head.
  for (const char* decode : {"gqa_decode.py", "mla_decode.py"}) {
    const auto g = ollie::spec::load_spec(dir + decode, {});
    EXPECT_TRUE(row_blocks(g, Target{64, 2}).empty()) << decode;
  }
}

// A reshape that splits one axis into blocks ([64*(N//64), D] -> [(N//64), 64, D], the
// keys of a flash rewrite) is read at (i*64 + i1, d): no flat-index divisions, which cost
// an integer division per element in the inner loop.
TEST(LoopsLower, ASplitAxisReshapeMapsPerGroup) {
  using ollie::ir::DimExpr;
  ollie::ir::Graph g;
  g.entry = "blocks";
  const DimExpr n = DimExpr::symbol("N"), d = DimExpr::symbol("D");
  const DimExpr nb = n.floordiv(64), full = nb * DimExpr::constant(64);
  g.dims = {"N", "D"};
  g.bound_dims = {{"N", 200}, {"D", 8}};
  g.params.push_back({"x", DType::F32, {n, d}});
  ollie::ir::Builder b(g);
  const auto x = b.input(0, "x", DType::F32, {n, d});
  g.inputs.push_back(x);
  const auto sliced = b.slice(x, {{DimExpr::constant(0), full, 1}, {DimExpr::constant(0), d, 1}});
  const auto blocks = b.reshape(sliced, {nb, DimExpr::constant(64), d});
  const auto e = b.unary(OpKind::Exp, blocks);
  g.results.push_back({"out0", DType::F32, {nb, DimExpr::constant(64), d}});
  g.outputs.push_back(e);
  ollie::ir::verify(g);
  const std::string text = to_text(lower(g));
  EXPECT_NE(text.find("x[((((i * 64) + i1) * D) + d)]"), std::string::npos) << text;
  EXPECT_EQ(text.find(" / "), std::string::npos) << text;
}

TEST(LoopsLower, MatmulGolden) {
  const auto g = ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/matmul.py", {});
  // Unscheduled: one serial nest, the initialisation just outside the reduction loop.
  EXPECT_EQ(to_text(lower(g)),
            R"(kernel matmul(in a: f32[M, K], in b: f32[K, N], out out0: f32[M, N]) dims [M, K, N]
  for m in [0, M):
    for n in [0, N):
      out0[((m * N) + n)] = f32(0)
      for k in [0, K) reduce:
        out0[((m * N) + n)] = (out0[((m * N) + n)] + (a[((m * K) + k)] * b[((k * N) + n)]))
)");
  // The default schedule gives the contraction a register tile: 6 rows of m by 2 vectors
  // of n (contiguous in b and out0) in 192 accumulators across the k loop, a copy with
  // constant trip counts for full tiles and a guarded one for tiles cut by M or N.
  const Schedule sched = default_schedule(g, Target{64, 2});
  EXPECT_EQ(to_text(sched),
            "split out0 m 6\nsplit out0 n 32\nreorder out0 m_o n_o k m_i n_i\naccumulate out0 n_o\n"
            "vectorize out0 n_i\nunroll out0 m_i\nparallel out0 m_o\n");
  EXPECT_EQ(to_text(lower(g, sched)),
            R"(kernel matmul(in a: f32[M, K], in b: f32[K, N], out out0: f32[M, N]) dims [M, K, N]
  parallel for m_o in [0, ((M + 5)//6)):
    for n_o in [0, ((N + 31)//32)):
      allocate out0_acc: f32[192]
      if ((min(6, (M - (m_o * 6))) == 6) && (min(32, (N - (n_o * 32))) == 32)):
        vectorized for a_2 in [0, 192):
          out0_acc[a_2] = f32(0)
        for k in [0, K) reduce:
          unrolled for m_i in [0, 6):
            vectorized for n_i in [0, 32):
              out0_acc[((m_i * 32) + n_i)] = (out0_acc[((m_i * 32) + n_i)] + (a[((((m_o * 6) + m_i) * K) + k)] * b[((k * N) + ((n_o * 32) + n_i))]))
        for m_i in [0, 6):
          vectorized for n_i in [0, 32):
            out0[((((m_o * 6) + m_i) * N) + ((n_o * 32) + n_i))] = out0_acc[((m_i * 32) + n_i)]
      else:
        vectorized for a_2 in [0, 192):
          out0_acc[a_2] = f32(0)
        for k in [0, K) reduce:
          for m_i in [0, min(6, (M - (m_o * 6)))):
            vectorized for n_i in [0, min(32, (N - (n_o * 32)))):
              out0_acc[((m_i * 32) + n_i)] = (out0_acc[((m_i * 32) + n_i)] + (a[((((m_o * 6) + m_i) * K) + k)] * b[((k * N) + ((n_o * 32) + n_i))]))
        for m_i in [0, min(6, (M - (m_o * 6)))):
          vectorized for n_i in [0, min(32, (N - (n_o * 32)))):
            out0[((((m_o * 6) + m_i) * N) + ((n_o * 32) + n_i))] = out0_acc[((m_i * 32) + n_i)]
)");
  // Without a tile (reorder only), n innermost, vectorized; the initialisation is a nest
  // of its own in front.
  EXPECT_EQ(
      to_text(lower(g, parse_schedule("reorder out0 m k n; vectorize out0 n; parallel out0 m"))),
      R"(kernel matmul(in a: f32[M, K], in b: f32[K, N], out out0: f32[M, N]) dims [M, K, N]
  parallel for m in [0, M):
    vectorized for n in [0, N):
      out0[((m * N) + n)] = f32(0)
    for k in [0, K) reduce:
      vectorized for n in [0, N):
        out0[((m * N) + n)] = (out0[((m * N) + n)] + (a[((m * K) + k)] * b[((k * N) + n)]))
)");
}

TEST(LoopsLower, LayoutOpsBecomeIndexArithmetic) {
  const auto g = spec(
      "DIMS = dict(M=3, N=4)\n"
      "def f(x: \"f32[M, N]\", v: \"f32[N]\") -> \"f32[N, M]\":\n"
      "    return (x + v).T\n");
  // The add is inlined into the transposed copy; the broadcast of v is just v[n].
  EXPECT_EQ(to_text(lower(g)),
            R"(kernel f(in x: f32[M, N], in v: f32[N], out out0: f32[N, M]) dims [M, N]
  for n in [0, N):
    for m in [0, M):
      out0[((n * M) + m)] = (x[((m * N) + n)] + v[n])
)");
}

TEST(LoopsLower, InlinesOnlySingleReadElementwise) {
  // e = exp(x) is read twice (sum and divide): it keeps its buffer; x - 1 is read once.
  const auto g = spec(
      "DIMS = dict(M=3, N=4)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(x - 1.0)\n"
      "    return e / e.sum(axis=-1, keepdims=True)\n");
  const std::string text = to_text(lower(g));
  EXPECT_NE(text.find("= exp((x[((m * N) + n)] - f32(1)))"), std::string::npos) << text;
  EXPECT_NE(text.find("allocate t"), std::string::npos) << text;
}

TEST(LoopsLower, ReductionLoopsAreInnermostAndNeverParallel) {
  const auto g = spec(
      "DIMS = dict(M=3, N=4)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[N]\":\n"
      "    return x.max(axis=0)\n");
  EXPECT_EQ(to_text(lower(g, default_schedule(g, Target{64, 2}))),
            R"(kernel f(in x: f32[M, N], out out0: f32[N]) dims [M, N]
  parallel for n in [0, N):
    out0[n] = f32(-inf)
    for m in [0, M) reduce:
      out0[n] = max(out0[n], x[((m * N) + n)])
)");
}

TEST(LoopsLower, SameDimTwiceGetsDistinctLoopNames) {
  const auto g = spec(
      "DIMS = dict(N=4)\n"
      "def f(u: \"f32[N]\", v: \"f32[N]\") -> \"f32[N, N]\":\n"
      "    return np.einsum('i,j->ij', u, v)\n");
  const std::string text = to_text(lower(g));
  EXPECT_NE(text.find("for n1 in [0, N)"), std::string::npos) << text;
}

}  // namespace
