// Tests of the tensor-IR rewrites (src/rewrite/): each rule applied on a real example
// computes the same values as the original (the reference interpreter, in double, on
// random inputs), does what it is for (fewer divides, the scale on the smaller operand,
// the other contraction order), is refused where it would be wrong, and its site text
// round-trips through replay. Then every site of every example: the rewritten graph is
// well formed, equal in value, and lowers under its default schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>

#include "interp/interp.h"
#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "spec/spec.h"

namespace {

using namespace ollie;
using rewrite::Site;

// The example with every dim at most 8 (the interpreter stays fast on every site), or
// the sizes given.
ir::Graph example(const std::string& name, const ir::DimBindings& dims = {}) {
  const std::string path = std::string(OLLIE_SOURCE_DIR) + "/examples/" + name + ".py";
  const ir::Graph full = spec::load_spec(path, {});
  spec::SpecOptions small;
  for (const auto& d : full.dims)
    small.dim_overrides[d] = std::min<int64_t>(full.bound_dims.at(d), 8);
  for (const auto& [d, size] : dims) small.dim_overrides[d] = size;
  try {
    return spec::load_spec(path, small);
  } catch (const UserError&) {
    // Dims the spec ties (llama's D = 8 * HD through a reshape) do not all shrink to 8:
    // the example's own sizes then, with the overrides asked for.
    spec::SpecOptions asked;
    asked.dim_overrides = dims;
    return spec::load_spec(path, asked);
  }
}

ir::Graph from_source(const std::string& source) {
  return spec::compile_spec("test.py", "import numpy as np\nDIMS = dict(M=4, N=6, K=5)\n" + source,
                            {});
}

std::vector<interp::Tensor> random_inputs(const ir::Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<interp::Tensor> inputs;
  for (const auto& p : g.params) {
    interp::Tensor t;
    t.dtype = p.dtype;
    t.shape = ir::evaluate_shape(p.shape, g.bound_dims);
    t.data.resize(static_cast<size_t>(ir::element_count(t.shape)));
    for (double& v : t.data) v = normal(rng);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// The largest difference between the two graphs' outputs relative to the outputs' size.
double relative_difference(const ir::Graph& a, const ir::Graph& b, uint64_t seed = 1) {
  const auto inputs = random_inputs(a, seed);
  const interp::Result ra = interp::evaluate(a, inputs), rb = interp::evaluate(b, inputs);
  double worst = 0;
  EXPECT_EQ(ra.values.size(), rb.values.size());
  for (size_t o = 0; o < ra.values.size() && o < rb.values.size(); ++o) {
    EXPECT_EQ(ra.values[o].shape, rb.values[o].shape);
    double scale = 1e-30;
    for (double v : ra.values[o].data) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < ra.values[o].data.size(); ++i)
      worst = std::max(worst, std::abs(ra.values[o].data[i] - rb.values[o].data[i]) / scale);
  }
  return worst;
}

std::vector<Site> sites_of(const ir::Graph& g, const std::string& rule) {
  std::vector<Site> out;
  for (const Site& s : rewrite::find_sites(g))
    if (s.rule == rule) out.push_back(s);
  return out;
}

// Elements divided by all Div values of the graph at its bound dims.
int64_t divided_elements(const ir::Graph& g) {
  int64_t n = 0;
  for (const auto& node : g.nodes)
    if (node.kind == ir::OpKind::Div)
      n += ir::element_count(ir::evaluate_shape(node.shape, g.bound_dims));
  return n;
}

int count_kind(const ir::Graph& g, ir::OpKind kind) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(),
                                        [&](const ir::Node& n) { return n.kind == kind; }));
}

// Applies `site`, checks the result equals the original in value, that the site's text
// replays to the same graph and that the ABI is untouched; returns the result.
ir::Graph applied(const ir::Graph& g, const Site& site) {
  const ir::Graph out = rewrite::apply(g, site);
  EXPECT_LT(relative_difference(g, out), 1e-12) << rewrite::to_text(site) << "\n"
                                                << ir::to_text(out);
  const std::string text = rewrite::to_text(site);
  EXPECT_EQ(rewrite::parse_site(text), site) << text;
  EXPECT_EQ(ir::to_text(rewrite::replay(g, text + "\n")), ir::to_text(out)) << text;
  EXPECT_EQ(out.params.size(), g.params.size());
  EXPECT_EQ(out.dims, g.dims);
  EXPECT_EQ(out.bound_dims, g.bound_dims);
  for (size_t r = 0; r < g.results.size(); ++r) EXPECT_EQ(out.results[r].shape, g.results[r].shape);
  return out;
}

TEST(Reciprocal, SoftmaxDividesOncePerRow) {
  const ir::Graph g = example("softmax");
  const auto sites = sites_of(g, "reciprocal");
  ASSERT_EQ(sites.size(), 1u);
  const ir::Graph out = applied(g, sites[0]);
  const int64_t M = g.bound_dims.at("M"), N = g.bound_dims.at("N");
  EXPECT_EQ(divided_elements(g), M * N);
  EXPECT_EQ(divided_elements(out), M);  // one reciprocal per row, then multiplies
  EXPECT_TRUE(sites_of(out, "reciprocal").empty()) << ir::to_text(out);
}

TEST(Reciprocal, DivisionByALiteralBecomesAMultiplication) {
  const ir::Graph g =
      from_source("def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return x / 4.0\n");
  const auto sites = sites_of(g, "reciprocal");
  ASSERT_EQ(sites.size(), 1u);
  const ir::Graph out = applied(g, sites[0]);
  EXPECT_EQ(count_kind(out, ir::OpKind::Div), 0) << ir::to_text(out);
  bool quarter = false;
  for (const auto& n : out.nodes)
    quarter = quarter || (n.kind == ir::OpKind::Const && n.const_value == 0.25);
  EXPECT_TRUE(quarter) << ir::to_text(out);
}

TEST(Reciprocal, NotForADivisorOfTheFullShape) {
  const ir::Graph g = from_source(
      "def f(x: \"f32[M, N]\", y: \"f32[M, N]\") -> \"f32[M, N]\":\n    return x / y\n");
  EXPECT_TRUE(sites_of(g, "reciprocal").empty());
  EXPECT_THROW(rewrite::apply(g, {"reciprocal", 2, 0}), UserError);
}

TEST(NormalizeLate, MlaDecodeDividesTheContractedResult) {
  const ir::Graph g = example("mla_decode");
  const auto sites = sites_of(g, "normalize-late");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(rewrite::to_text(sites[0]), "normalize-late %23 lhs");
  const ir::Graph out = applied(g, sites[0]);
  const int64_t B = g.bound_dims.at("B"), H = g.bound_dims.at("H"), S = g.bound_dims.at("S"),
                L = g.bound_dims.at("L");
  EXPECT_EQ(divided_elements(g), B * H * S);
  EXPECT_EQ(divided_elements(out), B * H * L);
}

TEST(NormalizeLate, AttentionAndMultiHeadAttention) {
  // Probabilities [.., S, S] then times values [.., S, D]: S x S divides become S x D.
  const std::map<std::string, ir::DimBindings> dims = {
      {"attention_causal", {{"S", 16}, {"D", 4}}},
      {"mha_causal", {{"S", 16}, {"DM", 8}, {"H", 2}, {"HD", 4}}}};
  for (const auto& [name, sizes] : dims) {
    const ir::Graph g = example(name, sizes);
    const auto sites = sites_of(g, "normalize-late");
    ASSERT_FALSE(sites.empty()) << name << "\n" << ir::to_text(g);
    const ir::Graph out = applied(g, sites[0]);
    EXPECT_LT(divided_elements(out), divided_elements(g)) << name;
  }
}

TEST(NormalizeLate, NotWhenTheDivisorVariesAlongTheSummedAxis) {
  // Columns normalized, then rows of p times v: the sum runs along the axis the divisor
  // varies over, so the division cannot move after it.
  const ir::Graph g = from_source(
      "def f(e: \"f32[M, N]\", v: \"f32[N, K]\") -> \"f32[M, K]\":\n"
      "    p = e / e.sum(axis=0, keepdims=True)\n"
      "    return p @ v\n");
  EXPECT_TRUE(sites_of(g, "normalize-late").empty()) << ir::to_text(g);
  // The same with rows normalized applies.
  const ir::Graph rows = from_source(
      "def f(e: \"f32[M, N]\", v: \"f32[N, K]\") -> \"f32[M, K]\":\n"
      "    p = e / e.sum(axis=1, keepdims=True)\n"
      "    return p @ v\n");
  ASSERT_EQ(sites_of(rows, "normalize-late").size(), 1u);
  applied(rows, sites_of(rows, "normalize-late")[0]);
}

TEST(NormalizeLate, PutsTheScaleInTheOutputsAxisOrder) {
  // The row scale lands on the result's second axis (transposed output).
  const ir::Graph g = from_source(
      "def f(e: \"f32[M, N]\", v: \"f32[N, K]\") -> \"f32[K, M]\":\n"
      "    p = e / e.sum(axis=1, keepdims=True)\n"
      "    return np.einsum('mn,nk->km', p, v)\n");
  const auto sites = sites_of(g, "normalize-late");
  ASSERT_EQ(sites.size(), 1u);
  applied(g, sites[0]);
}

TEST(FoldScale, MlaDecodeScaleMovesIntoBothScoreProducts) {
  const ir::Graph g = example("mla_decode");
  // (c1 + c2) * SCALE: distribute first, then fold into each product.
  ASSERT_TRUE(sites_of(g, "fold-scale").empty());
  const auto spread = sites_of(g, "distribute");
  ASSERT_EQ(spread.size(), 1u);
  ir::Graph out = applied(g, spread[0]);
  for (int round = 0; round < 2; ++round) {
    const auto folds = sites_of(out, "fold-scale");
    ASSERT_FALSE(folds.empty()) << ir::to_text(out);
    // Fold into the smaller operand (the per-head query side, not the S-long cache).
    const Site* smallest = nullptr;
    int64_t smallest_size = 0;
    for (const Site& s : folds) {
      const ir::Node& c = out.node(out.node(s.node).operands[0]).kind == ir::OpKind::Contract
                              ? out.node(out.node(s.node).operands[0])
                              : out.node(out.node(s.node).operands[1]);
      const int64_t size = ir::element_count(ir::evaluate_shape(
          out.node(c.operands[static_cast<size_t>(s.variant)]).shape, out.bound_dims));
      if (!smallest || size < smallest_size) smallest = &s, smallest_size = size;
    }
    out = applied(out, *smallest);
  }
  // The scale now multiplies [B, H, *] query operands only: no mul over [B, H, S] is left.
  for (const auto& n : out.nodes)
    if (n.kind == ir::OpKind::Mul) {
      EXPECT_NE(ir::shape_str(n.shape), "[B, H, S]") << ir::to_text(out);
    }
  EXPECT_LT(relative_difference(g, out, 7), 1e-12);
}

TEST(FoldScale, NotForAFactorThatIsNotOneNumber) {
  const ir::Graph g = from_source(
      "def f(a: \"f32[M, K]\", b: \"f32[K, N]\", c: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    return (a @ b) * c\n");
  EXPECT_TRUE(sites_of(g, "fold-scale").empty());
  const ir::Graph sum = from_source(
      "def f(a: \"f32[M, N]\", b: \"f32[M, N]\", c: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    return (a + b) * c\n");
  EXPECT_TRUE(sites_of(sum, "distribute").empty());
}

TEST(Associate, MlaDecodeReachesEveryOrderAndComesBack) {
  const ir::Graph g = example("mla_decode");
  // out = (p . c_kv) . w_uv  ->  p . (c_kv . w_uv): the value projection de-absorbed.
  const Site right{"associate", 24, 0};
  const auto sites = sites_of(g, "associate");
  ASSERT_NE(std::find(sites.begin(), sites.end(), right), sites.end());
  const ir::Graph deabsorbed = applied(g, right);
  // The pair is c_kv with w_uv: a [B, S, H, DV]-sized value exists now.
  bool per_token_values = false;
  for (const auto& n : deabsorbed.nodes)
    per_token_values = per_token_values || (n.kind == ir::OpKind::Contract && n.shape.size() == 4);
  EXPECT_TRUE(per_token_values) << ir::to_text(deabsorbed);
  // Back: the new pair is the site's rhs; Z joining its lhs gives (p . c_kv) . w_uv again.
  const ir::ValueId top = deabsorbed.outputs[0];
  const ir::Graph back = applied(deabsorbed, {"associate", top, 3});
  EXPECT_EQ(back.nodes.size(), g.nodes.size());
  EXPECT_LT(relative_difference(g, back, 3), 1e-12);
  // The third order, (p . w_uv) . c_kv, from the other form (at these small dims).
  applied(g, {"associate", 24, 1});
  // Query side: q_nope . (w_uk . c_kv), the key projection de-absorbed.
  applied(g, {"associate", 7, 0});
}

TEST(Associate, NotWhenTheNewIntermediateWouldDwarfTheGraph) {
  // At the example's own sizes p . w_uv is B x H x S x L x DV = 2^32 elements, 2048 times
  // the cache c_kv; c_kv . w_uv (de-absorption, S x H x DV) is 4 times it and stays.
  const ir::Graph g =
      spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py", {});
  const auto sites = sites_of(g, "associate");
  EXPECT_EQ(std::count(sites.begin(), sites.end(), Site{"associate", 24, 1}), 0);
  EXPECT_EQ(std::count(sites.begin(), sites.end(), Site{"associate", 24, 0}), 1);
}

TEST(Associate, NotWhenTheInnerProductHasAnotherUse) {
  const ir::Graph g = from_source(
      "def f(a: \"f32[M, K]\", b: \"f32[K, M]\", c: \"f32[M, M]\") -> \"f32[M, M]\":\n"
      "    t = a @ b\n"
      "    return (t @ c) + t\n");
  EXPECT_TRUE(sites_of(g, "associate").empty()) << ir::to_text(g);
}

TEST(Exp2, MlaDecodeFoldsLog2eIntoTheScoreScaleThroughTheMax) {
  const ir::Graph g = example("mla_decode");
  const auto sites = sites_of(g, "exp2");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(rewrite::to_text(sites[0]), "exp2 %18");
  const ir::Graph out = applied(g, sites[0]);
  EXPECT_EQ(count_kind(out, ir::OpKind::Exp), 0);
  EXPECT_EQ(count_kind(out, ir::OpKind::Exp2), 1);
  EXPECT_EQ(count_kind(out, ir::OpKind::Mul),
            count_kind(g, ir::OpKind::Mul));  // no new multiplication
  EXPECT_EQ(out.nodes.size(), g.nodes.size());
  bool folded = false;
  for (const auto& n : out.nodes)
    folded =
        folded || (n.kind == ir::OpKind::Const &&
                   std::abs(n.const_value - 0.13523377886088009 * std::numbers::log2e) < 1e-15);
  EXPECT_TRUE(folded) << ir::to_text(out);
}

TEST(Exp2, OnlyWhereLog2eFoldsIntoAPositiveLiteralScale) {
  const ir::Graph g =
      from_source("def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return np.exp(x * 0.5)\n");
  const ir::Graph out = applied(g, sites_of(g, "exp2").at(0));
  EXPECT_EQ(count_kind(out, ir::OpKind::Mul), 1) << ir::to_text(out);
  // Plain softmax has no scale to fold into: exp2(x * log2(e)) would add a rounding.
  EXPECT_TRUE(sites_of(example("softmax"), "exp2").empty());
  // A whole-tensor factor is no literal.
  EXPECT_TRUE(sites_of(from_source("def f(x: \"f32[M, N]\", y: \"f32[M, N]\") -> \"f32[M, N]\":\n"
                                   "    return np.exp(x * y)\n"),
                       "exp2")
                  .empty());
  // max(-x) != -max(x): a negative scale does not commute with the max.
  const std::string softmax_scaled =
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    s = x * {}\n"
      "    e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
      "    return e / e.sum(axis=-1, keepdims=True)\n";
  auto with_scale = [&](const std::string& c) {
    std::string src = softmax_scaled;
    src.replace(src.find("{}"), 2, c);
    return from_source(src);
  };
  EXPECT_TRUE(sites_of(with_scale("-0.5"), "exp2").empty());
  const ir::Graph positive = with_scale("0.5");
  ASSERT_EQ(sites_of(positive, "exp2").size(), 1u);
  applied(positive, sites_of(positive, "exp2")[0]);
}

TEST(SplitReduce, SoftmaxRowReductionsInHalves) {
  const ir::Graph g = example("softmax", {{"M", 3}, {"N", 7}});  // an odd row: halves of 3 and 4
  const auto sites = sites_of(g, "split-reduce");
  ASSERT_EQ(sites.size(), 2u);  // the max and the sum, halves only (one axis each)
  for (const Site& s : sites) {
    EXPECT_EQ(rewrite::to_text(s).substr(rewrite::to_text(s).size() - 6), "halves");
    const ir::Graph out = applied(g, s);
    EXPECT_EQ(count_kind(out, ir::OpKind::Slice), 2);
    EXPECT_EQ(count_kind(out, ir::OpKind::Reduce), 3);
  }
  // Twice on the max: quarters, still equal.
  const ir::Graph once = rewrite::apply(g, sites[0]);
  applied(once, sites_of(once, "split-reduce").at(0));
  // A row of one element: the first half is empty and adds the identity.
  const ir::Graph single = example("softmax", {{"M", 3}, {"N", 1}});
  for (const Site& s : sites_of(single, "split-reduce")) applied(single, s);
}

TEST(SplitReduce, SeveralAxesNestAndOneAxisDoesNot) {
  const ir::Graph g =
      from_source("def f(x: \"f32[M, N, K]\") -> \"f32[N]\":\n    return x.sum(axis=(0, 2))\n");
  const ir::Graph out = applied(g, {"split-reduce", 1, 0});
  EXPECT_EQ(count_kind(out, ir::OpKind::Reduce), 2);
  // Now each reduce has one axis: no nested site is left.
  for (const Site& s : sites_of(out, "split-reduce")) EXPECT_EQ(s.variant, 1);
  const ir::Graph m =
      from_source("def f(x: \"f32[M, N, K]\") -> \"f32[N]\":\n    return x.max(axis=(0, 2))\n");
  applied(m, {"split-reduce", 1, 0});
  applied(m, {"split-reduce", 1, 1});
}

TEST(Replay, AChainOfRewritesReplaysLineByLine) {
  const ir::Graph g = example("mla_decode");
  ir::Graph step = g;
  std::string chain;
  for (const std::string rule : {"distribute", "normalize-late", "reciprocal"}) {
    const auto sites = sites_of(step, rule);
    ASSERT_FALSE(sites.empty()) << rule;
    chain += rewrite::to_text(sites[0]) + "\n";
    step = rewrite::apply(step, sites[0]);
  }
  EXPECT_EQ(ir::to_text(rewrite::replay(g, "# a comment\n" + chain)), ir::to_text(step));
  EXPECT_LT(relative_difference(g, step), 1e-12);
}

TEST(Replay, ABadLineIsAnErrorNamingIt) {
  const ir::Graph g = example("softmax");
  auto message = [&](const std::string& chain) {
    try {
      rewrite::replay(g, chain);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("reciprocal %9\nreciprocal %9\n").find("line 2"), std::string::npos)
      << message("reciprocal %9\nreciprocal %9\n");
  EXPECT_NE(message("transmogrify %3\n").find("unknown rewrite rule 'transmogrify'"),
            std::string::npos);
  EXPECT_NE(message("reciprocal 3\n").find("line 1"), std::string::npos);
  EXPECT_NE(message("reciprocal %999\n").find("has no value %999"), std::string::npos);
  EXPECT_NE(message("associate %9 sideways\n").find("has the forms right, left"),
            std::string::npos);
  EXPECT_NE(message("reciprocal %0\n").find("does not apply"), std::string::npos);
}

// Every site of every example: well formed (apply runs ir::verify), equal in value, and
// the rewritten graph lowers under its default schedule (what the proposer emits).
TEST(EverySite, OfEveryExampleIsSoundAndLowers) {
  int applied_sites = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(OLLIE_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".py") continue;
    const ir::Graph g = example(entry.path().stem().string());
    for (const Site& site : rewrite::find_sites(g)) {
      SCOPED_TRACE(entry.path().stem().string() + ": " + rewrite::to_text(site));
      const ir::Graph out = rewrite::apply(g, site);
      EXPECT_LT(relative_difference(g, out), 1e-12);
      EXPECT_NO_THROW(loops::lower(out, loops::default_schedule(out)));
      ++applied_sites;
    }
  }
  EXPECT_GE(applied_sites, 20);
}

// ---- flash ----------------------------------------------------------------------------

// `g` evaluated at other sizes: its shapes are symbolic, only the bound dims change.
ir::Graph at_dims(ir::Graph g, const ir::DimBindings& dims) {
  for (const auto& [d, size] : dims) g.bound_dims[d] = size;
  return g;
}

// The example at `dims`, with normalize-late applied first (attention form) unless it is
// softmax, and exp2 first when asked.
ir::Graph softmax_site_graph(const std::string& name, const ir::DimBindings& dims,
                             bool exp2 = false) {
  ir::Graph g = example(name, dims);
  if (exp2) g = rewrite::apply(g, sites_of(g, "exp2").at(0));
  if (name != "softmax") g = rewrite::apply(g, sites_of(g, "normalize-late").at(0));
  return g;
}

const std::map<std::string, ir::DimBindings> kFlashExamples = {
    {"softmax", {{"M", 3}, {"N", 160}}},
    {"attention_causal", {{"S", 160}, {"D", 4}}},
    {"mha_causal", {{"S", 160}, {"DM", 8}, {"H", 2}, {"HD", 4}}},
    {"mla_decode", {{"B", 1}, {"H", 2}, {"S", 160}, {"L", 8}, {"DR", 4}, {"DN", 4}, {"DV", 4}}},
};

// The key axis' dim of each example, and sizes around the block of 64: one element, fewer
// than a block, exactly one, one more, not a multiple, several blocks and a tail.
std::string key_dim(const std::string& name) { return name == "softmax" ? "N" : "S"; }
const std::vector<int64_t> kKeyLengths = {1, 5, 63, 64, 65, 100, 128, 200};

TEST(Flash, FindsSitesOnSoftmaxAttentionMhaAndMla) {
  for (const auto& [name, dims] : kFlashExamples) {
    SCOPED_TRACE(name);
    const ir::Graph g = softmax_site_graph(name, dims);
    const auto sites = sites_of(g, "flash");
    // 160 keys: two blocks of 64; 256 and 1024 would leave fewer than two blocks.
    ASSERT_EQ(sites.size(), 1u) << ir::to_text(g);
    EXPECT_EQ(rewrite::to_text(sites[0]).substr(rewrite::to_text(sites[0]).size() - 3), " 64");
    applied(g, sites[0]);
    // At 2048 keys every block size gives at least two blocks.
    ir::DimBindings longer = dims;
    longer[key_dim(name)] = 2048;
    if (name == "softmax" || name == "mla_decode") {
      EXPECT_EQ(sites_of(softmax_site_graph(name, longer), "flash").size(), 3u);
    }
  }
  // The exp2 form (mla_decode's scale folded with log2 e) is a site too.
  const ir::Graph g2 = softmax_site_graph("mla_decode", kFlashExamples.at("mla_decode"), true);
  ASSERT_EQ(sites_of(g2, "flash").size(), 1u) << ir::to_text(g2);
  const ir::Graph out2 = applied(g2, sites_of(g2, "flash")[0]);
  EXPECT_EQ(count_kind(out2, ir::OpKind::Exp), 0);
  EXPECT_GE(count_kind(out2, ir::OpKind::Exp2), 3);  // blocks, block weights, tail
  // Before normalize-late, attention's probabilities are a plain softmax site: blocked
  // statistics, but the normalize pass still reads the whole [S, S] scores.
  const ir::Graph before = example("attention_causal", kFlashExamples.at("attention_causal"));
  ASSERT_EQ(sites_of(before, "flash").size(), 1u);
  EXPECT_EQ(sites_of(before, "flash")[0].node,
            before.node(before.outputs[0]).operands[0]);  // p = e / l
  const ir::Graph plain_form = applied(before, sites_of(before, "flash")[0]);
  bool full_scores = false;
  for (const auto& n : plain_form.nodes)
    full_scores = full_scores || ir::shape_str(n.shape) == "[S, S]";
  EXPECT_TRUE(full_scores);
}

TEST(Flash, EqualsTheOriginalAtEveryKeyLength) {
  for (const auto& [name, dims] : kFlashExamples) {
    const ir::Graph g = softmax_site_graph(name, dims);
    const ir::Graph out = rewrite::apply(g, sites_of(g, "flash").at(0));
    for (int64_t n : kKeyLengths) {
      SCOPED_TRACE(name + " at " + key_dim(name) + "=" + std::to_string(n));
      const ir::Graph a = at_dims(g, {{key_dim(name), n}}), b = at_dims(out, {{key_dim(name), n}});
      EXPECT_LT(relative_difference(a, b, static_cast<uint64_t>(n)), 1e-12);
    }
  }
}

TEST(Flash, AttentionScoresAreComputedPerKeyBlock) {
  // The blocks of the scores are pushed through the mask and the scale into the product
  // with the keys: no [S, S] value is left, the keys are sliced and reshaped into blocks.
  const ir::Graph g = softmax_site_graph("attention_causal", kFlashExamples.at("attention_causal"));
  const ir::Graph out = rewrite::apply(g, sites_of(g, "flash").at(0));
  for (const auto& n : out.nodes) EXPECT_NE(ir::shape_str(n.shape), "[S, S]") << ir::to_text(out);
  int blocked_products = 0;
  for (const auto& n : out.nodes)
    blocked_products +=
        n.kind == ir::OpKind::Contract && ir::shape_str(n.shape) == "[S, (S//64), 64]";
  EXPECT_EQ(blocked_products, 1) << ir::to_text(out);
  // One max and one sum per block, then over the blocks and the tail.
  int block_stats = 0;
  for (const auto& n : out.nodes)
    block_stats += n.kind == ir::OpKind::Reduce && ir::shape_str(n.shape) == "[S, (S//64)]";
  EXPECT_EQ(block_stats, 2) << ir::to_text(out);
}

TEST(Flash, ABlockOfMinusInfinityAddsNothing) {
  // A whole block of -inf scores (a masked key block) gives m_b = -inf: the original's
  // exponentials are 0 there; the blocked form must not make NaN of exp(-inf - -inf).
  const ir::Graph g = example("softmax", {{"M", 2}, {"N", 160}});
  const ir::Graph out = rewrite::apply(g, sites_of(g, "flash").at(0));
  auto inputs = random_inputs(g, 5);
  for (int64_t j = 64; j < 128; ++j)
    inputs[0].data[static_cast<size_t>(j)] = -INFINITY;  // row 0, block 1
  const interp::Result ra = interp::evaluate(g, inputs), rb = interp::evaluate(out, inputs);
  for (size_t i = 0; i < ra.values[0].data.size(); ++i) {
    ASSERT_FALSE(std::isnan(rb.values[0].data[i])) << i;
    EXPECT_NEAR(ra.values[0].data[i], rb.values[0].data[i], 1e-12) << i;
  }
}

TEST(Flash, RefusedWhereItWouldBeWrongOrTiny) {
  // Fewer than two blocks of 64 at the bound dims.
  EXPECT_TRUE(sites_of(example("softmax", {{"M", 3}, {"N", 100}}), "flash").empty());
  // The max and the sum over different axes is no softmax.
  const ir::Graph mixed = from_source(
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(x - x.max(axis=0, keepdims=True))\n"
      "    return e / e.sum(axis=1, keepdims=True)\n");
  EXPECT_TRUE(sites_of(at_dims(mixed, {{"M", 128}, {"N", 128}}), "flash").empty())
      << ir::to_text(mixed);
  // e read elsewhere too: the rewrite would have to keep it.
  const ir::Graph shared = spec::compile_spec("test.py",
                                              "import numpy as np\nDIMS = dict(M=4, N=128)\n"
                                              "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
                                              "    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
                                              "    return e / e.sum(axis=1, keepdims=True) + e\n",
                                              {});
  EXPECT_TRUE(sites_of(shared, "flash").empty()) << ir::to_text(shared);
  // The same softmax without the extra use is a site.
  const ir::Graph plain = spec::compile_spec("test.py",
                                             "import numpy as np\nDIMS = dict(M=4, N=128)\n"
                                             "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
                                             "    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
                                             "    return e / e.sum(axis=1, keepdims=True)\n",
                                             {});
  EXPECT_EQ(sites_of(plain, "flash").size(), 1u) << ir::to_text(plain);
}

TEST(Flash, LowersUnderTheDefaultSchedule) {
  for (const auto& [name, dims] : kFlashExamples) {
    SCOPED_TRACE(name);
    const ir::Graph g = softmax_site_graph(name, dims);
    const ir::Graph out = rewrite::apply(g, sites_of(g, "flash").at(0));
    EXPECT_NO_THROW(loops::lower(out, loops::default_schedule(out)));
  }
}

}  // namespace

namespace {

// The stage name of the only value of `g` that is a `kind` of shape `shape` (and reduce
// kind, for a Reduce); "" when there is not exactly one.
std::string stage_of(const ir::Graph& g, ir::OpKind kind, const std::string& shape,
                     ir::ReduceKind reduce = ir::ReduceKind::Sum) {
  std::string found;
  int count = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    if (n.kind != kind || ir::shape_str(n.shape) != shape) continue;
    if (kind == ir::OpKind::Reduce && n.reduce != reduce) continue;
    found = "t" + std::to_string(i);
    ++count;
  }
  return count == 1 ? found : "";
}

TEST(Flash, TheDefaultScheduleRunsEachBlockInOnePass) {
  // Attention: the block's max and sum (read later by the combination over blocks) run
  // under the block loop of the block's partial output o_b, beside the scores; the
  // combination over 2 blocks gets no register tile (it would leave the row's nest).
  const ir::Graph g = softmax_site_graph("attention_causal", {{"S", 160}, {"D", 8}});
  const ir::Graph out = rewrite::apply(g, sites_of(g, "flash").at(0));
  const std::string o_b = stage_of(out, ir::OpKind::Contract, "[S, (S//64), D]");
  const std::string m_b = stage_of(out, ir::OpKind::Reduce, "[S, (S//64)]", ir::ReduceKind::Max);
  const std::string l_b = stage_of(out, ir::OpKind::Reduce, "[S, (S//64)]", ir::ReduceKind::Sum);
  const std::string scores = stage_of(out, ir::OpKind::Contract, "[S, (S//64), 64]");
  ASSERT_FALSE(o_b.empty() || m_b.empty() || l_b.empty() || scores.empty()) << ir::to_text(out);
  const std::string text = loops::to_text(loops::default_schedule(out, loops::Target{64, 2}));
  for (const std::string& s : {m_b, l_b, scores})
    EXPECT_NE(text.find("compute_at " + s + " " + o_b + " i\n"), std::string::npos) << s << "\n"
                                                                                    << text;
  EXPECT_NE(text.find("compute_at " + o_b + " out0 s\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("accumulate"), std::string::npos) << text;
  // Softmax: the block's max inside the block loop of its sum of exponentials.
  const ir::Graph sm = example("softmax", {{"M", 3}, {"N", 160}});
  const ir::Graph sm_out = rewrite::apply(sm, sites_of(sm, "flash").at(0));
  const std::string sm_max =
      stage_of(sm_out, ir::OpKind::Reduce, "[M, (N//64)]", ir::ReduceKind::Max);
  const std::string sm_sum =
      stage_of(sm_out, ir::OpKind::Reduce, "[M, (N//64)]", ir::ReduceKind::Sum);
  ASSERT_FALSE(sm_max.empty() || sm_sum.empty()) << ir::to_text(sm_out);
  const std::string sm_text = loops::to_text(loops::default_schedule(sm_out, loops::Target{64, 2}));
  EXPECT_NE(sm_text.find("compute_at " + sm_max + " " + sm_sum + " i\n"), std::string::npos)
      << sm_text;
}

}  // namespace

namespace {

TEST(Flash, ASoftmaxOverTheFirstAxisAndAKeyAxisInTheMiddle) {
  // Softmax over axis 0, then the keys contracted from the left: the block axis lands in
  // front, the key operand is blocked along its first axis; then a key axis in the middle
  // of a 3-d score tensor (batch, keys, queries) read through a transpose.
  const ir::Graph first =
      spec::compile_spec("test.py",
                         "import numpy as np\nDIMS = dict(K=130, N=3, D=4)\n"
                         "def f(s: \"f32[K, N]\", v: \"f32[K, D]\") -> \"f32[N, D]\":\n"
                         "    e = np.exp(s - s.max(axis=0, keepdims=True))\n"
                         "    return np.einsum('kn,kd->nd', e / e.sum(axis=0, keepdims=True), v)\n",
                         {});
  const ir::Graph middle = spec::compile_spec(
      "test.py",
      "import numpy as np\nDIMS = dict(B=2, K=130, N=3, D=4)\n"
      "def f(q: \"f32[B, N, D]\", k: \"f32[B, K, D]\", v: \"f32[B, K, D]\") -> \"f32[B, N, D]\":\n"
      "    s = np.einsum('bnd,bkd->bkn', q, k) * 0.5\n"
      "    e = np.exp(s - s.max(axis=1, keepdims=True))\n"
      "    return np.einsum('bkn,bkd->bnd', e / e.sum(axis=1, keepdims=True), v)\n",
      {});
  for (const auto& [g, key] : {std::pair{&first, "K"}, std::pair{&middle, "K"}}) {
    // The plain softmax form first, then the attention form after normalize-late.
    ASSERT_EQ(sites_of(*g, "flash").size(), 1u) << ir::to_text(*g);
    const ir::Graph plain = applied(*g, sites_of(*g, "flash")[0]);
    const ir::Graph late = rewrite::apply(*g, sites_of(*g, "normalize-late").at(0));
    ASSERT_EQ(sites_of(late, "flash").size(), 1u) << ir::to_text(late);
    const ir::Graph out = applied(late, sites_of(late, "flash")[0]);
    for (int64_t n : {1, 7, 64, 100, 130}) {
      SCOPED_TRACE(std::string(key) + "=" + std::to_string(n));
      EXPECT_LT(relative_difference(at_dims(*g, {{key, n}}), at_dims(out, {{key, n}}), 3), 1e-12);
      EXPECT_LT(relative_difference(at_dims(*g, {{key, n}}), at_dims(plain, {{key, n}}), 4), 1e-12);
    }
    EXPECT_NO_THROW(loops::lower(out, loops::default_schedule(out)));
  }
}

}  // namespace

namespace {

// online: attention's contract(e, v) / sum e as two exp-weighted contractions of the
// scores, each one pass with a running max.
TEST(Online, FindsSitesOnAttentionMhaAndMlaButNotOnAPlainSoftmax) {
  for (const auto& [name, dims] : kFlashExamples) {
    SCOPED_TRACE(name);
    const ir::Graph g = softmax_site_graph(name, dims);
    const auto sites = sites_of(g, "online");
    if (name == "softmax") {
      // e / l: the normalize pass needs the max itself; nothing to do in one pass.
      EXPECT_TRUE(sites.empty());
      continue;
    }
    ASSERT_EQ(sites.size(), 1u) << ir::to_text(g);
    EXPECT_EQ(rewrite::to_text(sites[0]), "online %" + std::to_string(sites[0].node));
    const ir::Graph out = applied(g, sites[0]);
    // No max, no exponentials and no [.., S] weights are left: two exp_contracts of the
    // scores (the weighted sum and the sum), the division after them.
    EXPECT_EQ(count_kind(out, ir::OpKind::ExpContract), 2) << ir::to_text(out);
    EXPECT_EQ(count_kind(out, ir::OpKind::Exp) + count_kind(out, ir::OpKind::Exp2), 0)
        << ir::to_text(out);
    for (const auto& n : out.nodes)
      EXPECT_FALSE(n.kind == ir::OpKind::Reduce && n.reduce == ir::ReduceKind::Max)
          << ir::to_text(out);
  }
  // Before normalize-late the site is a softmax: not offered.
  EXPECT_TRUE(sites_of(example("attention_causal"), "online").empty());
  // The exp2 form keeps exp2.
  const ir::Graph g2 = softmax_site_graph("mla_decode", kFlashExamples.at("mla_decode"), true);
  const ir::Graph out2 = applied(g2, sites_of(g2, "online").at(0));
  for (const auto& n : out2.nodes) EXPECT_TRUE(n.kind != ir::OpKind::ExpContract || n.base2);
}

TEST(Online, EqualsTheOriginalAtEveryKeyLengthAndWithMaskedKeys) {
  for (const auto& [name, dims] : kFlashExamples) {
    if (name == "softmax") continue;
    for (bool exp2 : {false, true}) {
      if (exp2 && name != "mla_decode") continue;
      const ir::Graph g = softmax_site_graph(name, dims, exp2);
      const ir::Graph out = rewrite::apply(g, sites_of(g, "online").at(0));
      for (int64_t n : kKeyLengths) {
        SCOPED_TRACE(name + " at " + key_dim(name) + "=" + std::to_string(n) +
                     (exp2 ? " exp2" : ""));
        EXPECT_LT(relative_difference(at_dims(g, {{key_dim(name), n}}),
                                      at_dims(out, {{key_dim(name), n}}), static_cast<uint64_t>(n)),
                  1e-12);
      }
    }
  }
  // Scores of -inf (a mask that uses -inf) add nothing; a row of only -inf is NaN in both.
  const ir::Graph g =
      spec::compile_spec("test.py",
                         "import numpy as np\nDIMS = dict(N=3, K=6, D=2)\n"
                         "def f(s: \"f32[N, K]\", v: \"f32[K, D]\") -> \"f32[N, D]\":\n"
                         "    e = np.exp(s - s.max(axis=1, keepdims=True))\n"
                         "    return np.einsum('nk,kd->nd', e, v) / e.sum(axis=1, keepdims=True)\n",
                         {});
  const ir::Graph out = applied(g, sites_of(g, "online").at(0));
  auto inputs = random_inputs(g, 9);
  for (size_t k : {0, 1, 4})
    inputs[0].data[k] = -INFINITY;  // row 0: three masked keys, the first ones
  for (size_t k = 6; k < 12; ++k) inputs[0].data[k] = -INFINITY;  // row 1: all masked
  const interp::Result ra = interp::evaluate(g, inputs), rb = interp::evaluate(out, inputs);
  for (size_t i = 0; i < ra.values[0].data.size(); ++i) {
    if (i / 2 == 1) {
      EXPECT_TRUE(std::isnan(ra.values[0].data[i]) && std::isnan(rb.values[0].data[i])) << i;
      continue;
    }
    ASSERT_FALSE(std::isnan(rb.values[0].data[i])) << i;
    EXPECT_NEAR(ra.values[0].data[i], rb.values[0].data[i], 1e-12) << i;
  }
}

TEST(Online, TheWeightsOnEitherSideAndTheKeysOnAnyAxis) {
  // The probabilities as the contraction's right operand, the keys on axis 0 of the
  // scores; then a key axis in the middle of 3-d scores read through a transpose.
  const ir::Graph right =
      spec::compile_spec("test.py",
                         "import numpy as np\nDIMS = dict(K=30, N=3, D=4)\n"
                         "def f(s: \"f32[K, N]\", v: \"f32[K, D]\") -> \"f32[D, N]\":\n"
                         "    e = np.exp(s - s.max(axis=0, keepdims=True))\n"
                         "    return np.einsum('kd,kn->dn', v, e / e.sum(axis=0, keepdims=True))\n",
                         {});
  const ir::Graph middle = spec::compile_spec(
      "test.py",
      "import numpy as np\nDIMS = dict(B=2, K=30, N=3, D=4)\n"
      "def f(q: \"f32[B, N, D]\", k: \"f32[B, K, D]\", v: \"f32[B, K, D]\") -> \"f32[B, N, D]\":\n"
      "    s = np.einsum('bnd,bkd->bkn', q, k) * 0.5\n"
      "    e = np.exp(s - s.max(axis=1, keepdims=True))\n"
      "    return np.einsum('bkn,bkd->bnd', e / e.sum(axis=1, keepdims=True), v)\n",
      {});
  for (const ir::Graph* g : {&right, &middle}) {
    const ir::Graph late = rewrite::apply(*g, sites_of(*g, "normalize-late").at(0));
    ASSERT_EQ(sites_of(late, "online").size(), 1u) << ir::to_text(late);
    const ir::Graph out = applied(late, sites_of(late, "online")[0]);
    for (int64_t n : {1, 7, 30})
      EXPECT_LT(relative_difference(at_dims(*g, {{"K", n}}), at_dims(out, {{"K", n}}), 5), 1e-12);
    EXPECT_NO_THROW(loops::lower(out, loops::default_schedule(out)));
  }
}

TEST(Online, LowersToOnePassWithTheStepWeightsOutsideTheValueLoop) {
  // attention: under the default schedule the weighted sum runs s, then the keys, then d
  // (vectorized): the step's two weights are computed once per key, outside the d loop.
  const ir::Graph g = softmax_site_graph("attention_causal", {{"S", 40}, {"D", 8}});
  const ir::Graph out = rewrite::apply(g, sites_of(g, "online").at(0));
  const loops::Kernel k = loops::lower(out, loops::default_schedule(out, loops::Target{64, 2}));
  const std::string text = loops::to_text(k);
  std::string o;
  for (size_t i = 0; i < out.nodes.size(); ++i)
    if (out.nodes[i].kind == ir::OpKind::ExpContract && out.nodes[i].operands.size() == 2)
      o = "t" + std::to_string(i);
  ASSERT_FALSE(o.empty()) << ir::to_text(out);
  const size_t weights = text.find(o + "_max_w[0] = exp(");
  const size_t d_loop = text.find("for d", weights);
  const size_t update =
      text.find(o + "[d] = ((" + o + "[d] * " + o + "_max_w[0]) + (" + o + "_max_w[1] * ", weights);
  ASSERT_NE(weights, std::string::npos) << text;
  ASSERT_NE(update, std::string::npos) << text;
  EXPECT_LT(d_loop, update) << text;
  // rfactor and accumulate would split the running max: refused, naming the stage.
  for (const std::string& bad :
       {"split " + o + " s1 4\nrfactor " + o + " s1_i\n", "accumulate " + o + " s\n"}) {
    try {
      loops::lower(out, loops::parse_schedule(bad));
      ADD_FAILURE() << bad;
    } catch (const loops::ScheduleError& e) {
      EXPECT_NE(e.reason().find(o + " is an exp-weighted sum"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
