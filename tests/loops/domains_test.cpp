// Causal domains (src/loops/domains.cpp): a reduction under a triangular mask gets a loop
// bound that follows the mask, and its kernel is bit-identical to the kernel with the full
// loops at every length 1..130 and diagonal offset k in {-2, -1, 0, 1, 3}, inf and NaN
// inputs included, and agrees with the reference interpreter (every kernel of a test built
// in one compile: the kernels read their sizes at run time); the bound shows in the loop
// text; the directives it forbids are refused with named reasons.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "../emit/kernel_check.h"
#include "rewrite/rewrite.h"
#include "spec/spec.h"

namespace {

using namespace ollie_test;
namespace loops = ollie::loops;
using ollie::ir::Graph;

constexpr int kMaxLength = 130;
const int kOffsets[] = {-2, -1, 0, 1, 3};

// The mask forms, `{K}` standing for the diagonal offset k (keys j <= i + k are kept).
// np.tri with -inf: softmax statistics and probabilities, and a masked min.
const char* kTriSpec = R"(import numpy as np
DIMS = dict(S=8)
def masked(x: "f32[S, S]") -> ("f32[S, S]", "f32[S]", "f32[S]", "f32[S]"):
    s = x.shape[0]
    y = np.where(np.tri(s, s, {K}) > 0, x, -np.inf)
    m = y.max(axis=-1, keepdims=True)
    e = np.exp(y - m)
    l = e.sum(axis=-1, keepdims=True)
    lo = np.where(np.tri(s, s, {K}) > 0, x, np.inf).min(axis=-1)
    return e / l, m[:, 0], l[:, 0], lo
)";
// np.triu with a large finite negative (the examples' MASKED), as mha_causal writes it.
const char* kTriuSpec = R"(import numpy as np
DIMS = dict(S=8)
def masked(x: "f32[S, S]") -> ("f32[S]", "f32[S]"):
    s = x.shape[0]
    future = np.triu(np.ones((s, s)), {K} + 1) > 0
    y = np.where(future, -1e30, x)
    m = y.max(axis=-1, keepdims=True)
    return m[:, 0], np.exp(y - m).sum(axis=-1)
)";
// Comparisons of aranges, masked to 0 for a plain sum.
const char* kArangeSpec = R"(import numpy as np
DIMS = dict(S=8)
def masked(x: "f32[S, S]") -> "f32[S]":
    s = x.shape[0]
    keep = np.arange(s)[None, :] <= np.arange(s)[:, None] + {K}
    return np.where(keep, x, 0.0).sum(axis=-1)
)";

// p @ v after a masked softmax (np.tri with -inf; np.triu with the examples' finite
// MASKED over two heads, as mha_causal writes it): the contraction's loop over keys follows
// the mask when the skipped values of v are finite.
const char* kTriPvSpec = R"(import numpy as np
DIMS = dict(S=8, D=3)
def masked(x: "f32[S, S]", v: "f32[S, D]") -> "f32[S, D]":
    s = x.shape[0]
    y = np.where(np.tri(s, s, {K}) > 0, x, -np.inf)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v
)";
const char* kTriuPvSpec = R"(import numpy as np
DIMS = dict(S=8, H=2, D=3)
def masked(x: "f32[H, S, S]", v: "f32[H, S, D]") -> "f32[H, S, D]":
    s = x.shape[1]
    future = np.triu(np.ones((s, s)), {K} + 1) > 0
    y = np.where(future[None, :, :], -1e30, x)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p @ v
)";

std::string with_offset(const char* spec, int k) {
  std::string s = spec;
  for (size_t at; (at = s.find("{K}")) != std::string::npos;) s.replace(at, 3, std::to_string(k));
  return s;
}

Graph compile(const char* spec, int k) {
  return ollie::spec::compile_spec("masked.py", with_offset(spec, k), {});
}

// Lowering with the full loops, for the comparison.
struct FullLoops {
  FullLoops() { loops::set_causal_domains(false); }
  ~FullLoops() { loops::set_causal_domains(true); }
};

// Every input at length n (the graph's other dims as bound): normal values with inf, -inf
// and NaN sprinkled in, some rows entirely -inf, some -inf on and below the diagonal only
// (every kept score -inf), some rows of signed zeros.
std::vector<Tensor> special_inputs(const Graph& g, int n, unsigned seed) {
  Graph gn = g;
  gn.bound_dims["S"] = n;
  std::vector<Tensor> inputs = random_inputs(gn, seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 4);
  std::uniform_int_distribution<int> pick(0, 99);
  const double inf = std::numeric_limits<double>::infinity();
  for (Tensor& x : inputs) {
    const int64_t cols = x.shape.empty() ? 1 : x.shape.back();
    const int64_t rows = static_cast<int64_t>(x.data.size()) / std::max<int64_t>(cols, 1);
    for (int64_t i = 0; i < rows; ++i) {
      const int row_kind = pick(rng);
      for (int64_t j = 0; j < cols; ++j) {
        double v = static_cast<float>(normal(rng));
        const int p = pick(rng);
        if (p < 3)
          v = inf;
        else if (p < 6)
          v = -inf;
        else if (p < 8)
          v = std::numeric_limits<double>::quiet_NaN();
        if (row_kind < 8) v = -inf;
        if (row_kind >= 8 && row_kind < 16 && j <= i) v = -inf;
        if (row_kind >= 16 && row_kind < 22) v = j % 2 ? 0.0 : -0.0;
        x.data[static_cast<size_t>(i * cols + j)] = v;
      }
    }
  }
  return inputs;
}

// The values of p @ v's v at length n: by n % 4 all finite with signed zeros; one inf or
// NaN in a random row (so rows past it skip and rows before it run in full); NaN in the
// last row only; or special_inputs' inf / NaN everywhere.
void shape_v(Tensor& v, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  const int64_t cols = v.shape.back();
  const int64_t rows = n;
  const int64_t heads = static_cast<int64_t>(v.data.size()) / (rows * cols);
  if (n % 4 == 3) return;
  for (size_t e = 0; e < v.data.size(); ++e)
    v.data[e] = e % 7 == 0 ? (e % 2 ? -0.0 : 0.0) : static_cast<float>(normal(rng));
  const double bad = n % 8 == 1 ? std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::quiet_NaN();
  const int64_t h = static_cast<int64_t>(rng() % static_cast<uint64_t>(heads));
  const int64_t col = static_cast<int64_t>(rng() % static_cast<uint64_t>(cols));
  if (n % 4 == 1)
    v.data[static_cast<size_t>(
        (h * rows + static_cast<int64_t>(rng() % static_cast<uint64_t>(rows))) * cols + col)] = bad;
  if (n % 4 == 2) v.data[static_cast<size_t>((h * rows + rows - 1) * cols + col)] = bad;
}

bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Runs `entry` of `so` at every length 1..kMaxLength in one runner process.
std::vector<std::vector<Tensor>> run_all_lengths(const std::string& so, const std::string& entry,
                                                 const Graph& g,
                                                 const std::vector<std::vector<Tensor>>& inputs) {
  std::vector<Graph> graphs(kMaxLength, g);
  std::vector<const Graph*> gp;
  std::vector<const std::vector<Tensor>*> ip;
  for (int n = 1; n <= kMaxLength; ++n) {
    graphs[static_cast<size_t>(n - 1)].bound_dims["S"] = n;
    gp.push_back(&graphs[static_cast<size_t>(n - 1)]);
    ip.push_back(&inputs[static_cast<size_t>(n - 1)]);
  }
  ollie::runner::Options options;
  options.runner_path = OLLIE_RUNNER;
  options.timeout_seconds = 60;
  options.threads = 2;
  options.entry_symbol = entry;
  const ollie::runner::Outcome out = ollie::runner::run_calls(so, gp, ip, options);
  EXPECT_EQ(out.status, ollie::runner::Status::Ok) << out.message;
  return out.call_outputs;
}

// One graph to check: lowered under `schedule` with causal domains and with full loops.
struct Check {
  Graph g;
  loops::Schedule schedule;
  unsigned salt;
  std::string label;
  bool pv = false;  // the graph is p @ v (v shaped by shape_v); its contraction is bounded
};

// The two kernels of `c` (with the domain, then with full loops), their loop text checked
// for the bound's select; `text` gets the restricted kernel's loops, for messages.
std::pair<loops::Kernel, loops::Kernel> lower_both(const Check& c, std::string* text) {
  const loops::Kernel restricted = loops::lower(c.g, c.schedule);
  *text = loops::to_text(restricted);
  EXPECT_NE(text->find("select(((min(max("), std::string::npos) << "no causal domain\n" << *text;
  if (c.pv) {
    EXPECT_NE(text->find("_finite[0]"), std::string::npos) << "p @ v not bounded\n" << *text;
  }
  const FullLoops off;
  const loops::Kernel full = loops::lower(c.g, c.schedule);
  EXPECT_EQ(loops::to_text(full).find("select(((min(max("), std::string::npos);
  return {restricted, full};
}

// The outputs of the restricted kernel (entry `got_entry`) against the full one's (bit for
// bit) and the reference interpreter (within its bound, or the same inf / NaN), at every
// length S = 1..130.
void compare_at_every_length(const std::string& so, const Check& c, const std::string& got_entry,
                             const std::string& want_entry, const std::string& text) {
  SCOPED_TRACE(c.label);
  std::vector<std::vector<Tensor>> inputs;
  for (int n = 1; n <= kMaxLength; ++n) {
    inputs.push_back(special_inputs(c.g, n, static_cast<unsigned>(n * 31) + c.salt));
    if (c.pv) shape_v(inputs.back()[1], n, static_cast<unsigned>(n) + c.salt);
  }
  const auto got = run_all_lengths(so, got_entry, c.g, inputs);
  const auto want = run_all_lengths(so, want_entry, c.g, inputs);
  ASSERT_EQ(got.size(), static_cast<size_t>(kMaxLength));
  ASSERT_EQ(want.size(), got.size());
  for (int n = 1; n <= kMaxLength; ++n) {
    const auto& g_out = got[static_cast<size_t>(n - 1)];
    const auto& w_out = want[static_cast<size_t>(n - 1)];
    Graph gn = c.g;
    gn.bound_dims["S"] = n;
    const ollie::interp::Result ref =
        ollie::interp::evaluate(gn, inputs[static_cast<size_t>(n - 1)]);
    for (size_t o = 0; o < g_out.size(); ++o)
      for (size_t e = 0; e < g_out[o].data.size(); ++e) {
        const double a = g_out[o].data[e], b = w_out[o].data[e];
        ASSERT_TRUE(same_bits(a, b)) << "S=" << n << " out" << o << "[" << e << "]: " << a
                                     << " with the domain, " << b << " with full loops\n"
                                     << text;
        const double r = ref.values[o].data[e], bound = ref.bounds[o].data[e];
        const bool same_special = !std::isfinite(r) && (a == r || (std::isnan(a) && std::isnan(r)));
        ASSERT_TRUE(same_special || std::abs(a - r) <= bound)
            << "S=" << n << " out" << o << "[" << e << "]: " << a << ", reference " << r;
      }
  }
}

// Every check's two kernels go into one shared object (one compile for all of them; the
// kernels read every size from `dims`, so one build serves every length), then each is
// compared at every length.
void check_graphs(const std::vector<Check>& checks) {
  std::vector<std::pair<const Graph*, loops::Kernel>> kernels;
  std::vector<std::string> texts;
  for (const Check& c : checks) {
    SCOPED_TRACE(c.label);
    std::string text;
    auto [restricted, full] = lower_both(c, &text);
    if (::testing::Test::HasFailure()) return;
    kernels.emplace_back(&c.g, std::move(restricted));
    kernels.emplace_back(&c.g, std::move(full));
    texts.push_back(text);
  }
  const std::string so = build_kernels(kernels);
  ASSERT_FALSE(so.empty());
  for (size_t i = 0; i < checks.size(); ++i) {
    compare_at_every_length(so, checks[i], "ollie_entry_" + std::to_string(2 * i),
                            "ollie_entry_" + std::to_string(2 * i + 1), texts[i]);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// check_graphs over every offset k; `schedule_text` is a schedule's text, or "default"
// for the default schedule at S = 130.
void check_exact(const char* spec, const std::string& label, const std::string& schedule_text,
                 bool pv = false) {
  std::vector<Check> checks;
  for (const int k : kOffsets) {
    Graph g = compile(spec, k);
    g.bound_dims["S"] = kMaxLength;
    const loops::Schedule schedule = schedule_text == "default"
                                         ? loops::default_schedule(g, loops::Target{64, 2})
                                         : loops::parse_schedule(schedule_text);
    checks.push_back(
        {g, schedule, static_cast<unsigned>(k + 7), label + " k=" + std::to_string(k), pv});
  }
  check_graphs(checks);
}

TEST(CausalDomains, TriMaskedSoftmaxIsBitIdenticalAtEveryLength) {
  check_exact(kTriSpec, "tri", "");
}
TEST(CausalDomains, TriuLargeNegativeIsBitIdenticalAtEveryLength) {
  check_exact(kTriuSpec, "triu", "");
}
TEST(CausalDomains, ArangeMaskedSumIsBitIdenticalAtEveryLength) {
  check_exact(kArangeSpec, "arange", "");
}
// The default schedule: row maxes split and factored, row sums vectorized.
TEST(CausalDomains, DefaultScheduleTriIsBitIdenticalAtEveryLength) {
  check_exact(kTriSpec, "tri default", "default");
}
TEST(CausalDomains, DefaultScheduleTriuIsBitIdenticalAtEveryLength) {
  check_exact(kTriuSpec, "triu default", "default");
}

// p @ v: serial loops and the default schedule (the contraction register-tiled), with v
// Masked scores computed by a contraction (q @ k.T, then np.where(mask, s, -inf)): the
// where never reads the scores past the mask, so q @ k.T stops there.
const char* kTriQkSpec = R"(import numpy as np
DIMS = dict(S=8, D=3)
def masked(q: "f32[S, D]", k: "f32[S, D]") -> "f32[S, S]":
    s = q.shape[0]
    y = np.where(np.tri(s, s, {K}) > 0, q @ k.T, -np.inf)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
)";

// finite, with inf / NaN in the skipped part (the full loop), and fully masked rows.
TEST(CausalDomains, TriSoftmaxTimesVIsBitIdenticalAtEveryLength) {
  check_exact(kTriPvSpec, "tri pv", "", true);
}
TEST(CausalDomains, TriuHeadsSoftmaxTimesVIsBitIdenticalAtEveryLength) {
  check_exact(kTriuPvSpec, "triu pv", "", true);
}
TEST(CausalDomains, DefaultScheduleSoftmaxTimesVIsBitIdenticalAtEveryLength) {
  check_exact(kTriPvSpec, "tri pv default", "default", true);
  check_exact(kTriuPvSpec, "triu pv default", "default", true);
}

// Blocks of rows around the bounded loop (several query rows at once): the bound of the
// block is the largest of its rows', and each row's masked iterations past its own bound
// are exact; the row tail of S % 4 clamps to the rows it has.
TEST(CausalDomains, BlocksOfRowsAreBitIdenticalAtEveryLength) {
  check_exact(kTriPvSpec, "tri pv rows",
              "split out0 s 4\nreorder out0 s_o s1 s_i d\nsplit t23 s 3\n"
              "reorder t23 s_o s1 s_i\nsplit t18 s 5\nreorder t18 s_o s1 s_i",
              true);
}

// Bounded loops split (blocks past the bound never entered), factored over the inner
// loop, vectorized, unrolled, fused, accumulated in a local tile, parallel.
TEST(CausalDomains, SplitFactoredFusedIsBitIdenticalAtEveryLength) {
  check_exact(kTriSpec, "tri split",
              "compute_at t16 t17 s\nsplit t22 s1 16\nrfactor t22 s1_i\nvectorize t22_rf s1_i\n"
              "split t17 s1 8\nunroll t17 s1_i\nsplit out3 s1 32\nrfactor out3 s1_i\n"
              "vectorize out3_rf s1_i\nparallel out0 s");
}
TEST(CausalDomains, AccumulatedIsBitIdenticalAtEveryLength) {
  check_exact(kTriSpec, "tri accumulate",
              "split t22 s 4\naccumulate t22 s_o\nsplit t17 s 3\naccumulate t17 s_o");
}

// attention_causal after its flash rewrites (key blocks of 64 and a tail; blocks past the
// diagonal bound the block max and sum to one iteration or none) under its measured
// schedule.
TEST(CausalDomains, FlashAttentionIsBitIdenticalAtEveryLength) {
  ollie::spec::SpecOptions options;
  options.dim_overrides = {{"S", kMaxLength}, {"D", 5}};
  const std::string dir = std::string(OLLIE_SOURCE_DIR) + "/examples/";
  const Graph g =
      ollie::rewrite::replay(ollie::spec::load_spec(dir + "attention_causal.py", options),
                             "normalize-late %36 lhs\nflash %38 64\n");
  std::ifstream in(dir + "schedules/attention_causal.flash.schedule");
  const std::string schedule((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  check_graphs({{g, loops::parse_schedule(schedule), 3, "attention_causal flash"}});
}

std::string loops_text(const Graph& g, const std::string& schedule) {
  return loops::to_text(loops::lower(g, loops::parse_schedule(schedule)));
}

// The row sum of the causal softmax (k = 0) stops at s + 1, rounded up to 64, unless the
// masked term is not zero; the row max runs one masked iteration.
const std::string kSumBound =
    "select(((min(max((s + 1), 0), S) < S) && (t21[((s * S) + min(max((s + 1), 0), S))] != "
    "f32(0))), S, min((((min(max((s + 1), 0), S) + 63) / 64) * 64), S))";

TEST(CausalDomains, TheBoundShowsInTheLoopText) {
  const Graph g = compile(kTriSpec, 0);
  const std::string text = loops_text(g, "");
  EXPECT_NE(text.find("for s1 in [0, " + kSumBound + ") reduce:\n      t22[s] = (t22[s] + t21["),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", S, min((min(max((s + 1), 0), S) + 1), S))) reduce:\n      t17[s] = "),
            std::string::npos)
      << text;
  // Split: the blocks past the bound are never entered, the block on it is guarded.
  const std::string split = loops_text(g, "split t22 s1 16");
  EXPECT_NE(split.find("for s1_o in [0, ((" + kSumBound + " + 15) / 16)) reduce:"),
            std::string::npos)
      << split;
  EXPECT_NE(split.find("for s1_i in [0, min(16, (" + kSumBound + " - (s1_o * 16)))) reduce:"),
            std::string::npos)
      << split;
  // The offset k: keys j <= i - 2.
  EXPECT_NE(loops_text(compile(kTriSpec, -2), "").find("min(max((s + -1), 0), S)"),
            std::string::npos);
  // Turned off, every loop runs in full.
  const FullLoops off;
  EXPECT_EQ(loops_text(g, "").find("select((("), std::string::npos);
}

// q @ k.T past the mask is never computed (inf and NaN in q and k there change nothing),
// serial, under the default schedule (blocks of rows, a register tile) and split.
TEST(CausalDomains, ScoresPastTheMaskAreNotComputedAndBitIdenticalAtEveryLength) {
  const std::string text = loops_text(compile(kTriQkSpec, 0), "");
  EXPECT_NE(text.find("for s1 in [0, select((max((s + 1), 0) < S), max((s + 1), 0), S)):\n"),
            std::string::npos)
      << text;
  check_exact(kTriQkSpec, "tri qk", "");
  check_exact(kTriQkSpec, "tri qk default", "default");
}

std::string refusal(const Graph& g, const std::string& schedule) {
  try {
    loops::lower(g, loops::parse_schedule(schedule));
  } catch (const loops::ScheduleError& e) {
    return e.reason();
  }
  return "accepted";
}

TEST(CausalDomains, DirectivesThatWouldBreakTheBoundAreRefused) {
  const Graph g = compile(kTriSpec, 0);
  // The partial results past the bound would never be written.
  EXPECT_EQ(refusal(g, "rfactor t22 s1"), "loop s1 of t22 follows a causal mask bounded by loop s");
  EXPECT_EQ(refusal(g, "split t22 s1 16\nrfactor t22 s1_o"),
            "loop s1_o of t22 follows a causal mask bounded by loop s");
  EXPECT_EQ(refusal(g, "split t22 s1 16\nrfactor t22 s1_i"), "accepted");
  // The bound is over s: s1 stays inside it.
  EXPECT_EQ(refusal(g, "reorder t22 s1 s"), "the extent of loop s1 depends on loop s");
  // Outside a block of rows it follows the block's largest bound.
  EXPECT_EQ(refusal(g, "split t17 s 4\nreorder t17 s_o s1 s_i"), "accepted");
  EXPECT_EQ(refusal(g, "split t17 s 17\nreorder t17 s_o s1 s_i"),
            "the extent of loop s1 depends on loop s_i");
  // Shared loops must have the same extents: the exponentials cannot run inside the
  // bounded loop; at the row they can.
  EXPECT_EQ(refusal(g, "compute_at t21 t22 s1")
                .rfind("loop s1 of t21 walks [0, S) but loop s1 of "
                       "t22 walks [0, select(",
                       0),
            0u);
  EXPECT_EQ(refusal(g, "compute_at t21 t22 s"), "accepted");
}

}  // namespace
