// The rewrite proposer in the chains: its candidates carry the chain and the rewritten
// graph's schedule, the mutate proposer mutates that schedule against the rewritten graph,
// and (with the real evaluator: compile, verify at quick, time) a rewritten kernel passes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "search/search.h"
#include "spec/spec.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

ir::Graph mla_decode() {
  spec::SpecOptions o;
  o.dim_overrides = {{"B", 1}, {"H", 2}, {"S", 16}, {"L", 8}, {"DR", 4}, {"DN", 8}, {"DV", 8}};
  return spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py", o);
}

search::State baseline_state(const ir::Graph& g) {
  search::State s;
  s.candidate = search::baseline_candidate(g);
  return s;
}

// The chain lines of a move ("a; b" for a recipe of two rules).
std::string lines_of(std::string move) {
  for (size_t at; (at = move.find("; ")) != std::string::npos;) move.replace(at, 2, "\n");
  return move + "\n";
}

TEST(RewriteProposer, ProposesARewrittenKernelWithItsChainAndSchedule) {
  const ir::Graph g = mla_decode();
  auto proposer = search::make_rewrite_proposer(g);
  EXPECT_EQ(proposer->name(), "rewrite");
  const auto c = proposer->propose(baseline_state(g), 5);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->proposer, "rewrite");
  EXPECT_EQ(c->rewrites, lines_of(c->move));
  const ir::Graph rewritten = rewrite::replay(g, c->rewrites);
  EXPECT_EQ(c->schedule, loops::to_text(loops::default_schedule(rewritten)));
  // Deterministic in the seed; different seeds reach different sites.
  EXPECT_EQ(proposer->propose(baseline_state(g), 5)->source, c->source);
  std::set<std::string> moves;
  for (uint64_t seed = 0; seed < 20; ++seed)
    moves.insert(proposer->propose(baseline_state(g), seed)->move);
  EXPECT_GE(moves.size(), 4u);
  // A second rewrite extends the chain; node numbers refer to the graph after line one.
  search::State next;
  next.candidate = *c;
  const auto c2 = proposer->propose(next, 11);
  ASSERT_TRUE(c2.has_value());
  EXPECT_EQ(c2->rewrites, c->rewrites + lines_of(c2->move));
  EXPECT_NO_THROW(rewrite::replay(g, c2->rewrites));
  // Mutating the rewritten candidate's schedule works on the rewritten graph and keeps the chain.
  auto mutate = search::make_mutate_proposer(g);
  int mutated = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const auto m = mutate->propose(next, seed);
    if (!m) continue;
    ++mutated;
    EXPECT_EQ(m->rewrites, c->rewrites);
    EXPECT_NO_THROW(loops::lower(rewritten, loops::parse_schedule(m->schedule)));
  }
  EXPECT_GT(mutated, 0);
  // A chain at its maximum length grows no more.
  search::State long_chain = next;
  for (int i = 0; i < 24; ++i) long_chain.candidate.rewrites += "# line\n";
  EXPECT_FALSE(proposer->propose(long_chain, 1).has_value());
  // Free-form source: nothing to rewrite.
  search::State free_form;
  free_form.candidate.source = "/* hand written */";
  free_form.candidate.proposer = "hand";
  EXPECT_FALSE(proposer->propose(free_form, 1).has_value());
}

TEST(RewriteProposer, EachRuleThatAppliesIsAsLikelyWhateverItsSiteCount) {
  // Attention beside a sum that split-reduce halves three times: many split-reduce sites
  // (each half is a new one), one online site, a few of the others. Drawing a rule first
  // gives online about 1 in (rules that apply) of the proposals.
  const ir::Graph g = spec::compile_spec(
      "test.py",
      "import numpy as np\nDIMS = dict(N=3, K=40, D=4)\n"
      "def f(s: \"f32[N, K]\", v: \"f32[K, D]\", x: \"f32[N, D, K]\") -> \"f32[N, D]\":\n"
      "    e = np.exp(s - s.max(axis=1, keepdims=True))\n"
      "    return np.einsum('nk,kd->nd', e, v) / e.sum(axis=1, keepdims=True) + x.sum(axis=2)\n",
      {});
  std::string chain;
  for (int i = 0; i < 3; ++i) {
    const ir::Graph now = rewrite::replay(g, chain);
    for (const auto& s : rewrite::find_sites(now)) {
      const ir::Node& n = now.node(s.node);
      if (s.rule == "split-reduce" && s.variant == 1 && n.shape.size() == 2 &&
          n.reduce == ir::ReduceKind::Sum && now.node(n.operands[0]).shape.size() == 3) {
        chain += rewrite::to_text(s) + "\n";
        break;
      }
    }
  }
  const auto sites = rewrite::find_sites(rewrite::replay(g, chain));
  std::set<std::string> rules;
  size_t splits = 0;
  for (const auto& s : sites) {
    rules.insert(s.rule);
    splits += s.rule == "split-reduce";
  }
  ASSERT_TRUE(rules.count("online")) << chain;
  ASSERT_GE(splits, 6u) << chain;
  // So that a draw uniform over sites would give online at most half its share.
  ASSERT_GE(sites.size(), 2 * rules.size()) << chain;
  search::State state;
  state.candidate = search::baseline_candidate(g);
  state.candidate.rewrites = chain;
  auto proposer = search::make_rewrite_proposer(g);
  int online = 0;
  std::map<std::string, int> per_rule;
  const int draws = 400;
  for (uint64_t seed = 0; seed < static_cast<uint64_t>(draws); ++seed) {
    const auto c = proposer->propose(state, seed);
    ASSERT_TRUE(c.has_value());
    online += c->move.rfind("online ", 0) == 0;
    ++per_rule[c->move.substr(0, c->move.find(' '))];
  }
  // Expected draws / rules.size(); a uniform draw over sites would give draws / sites.size().
  const double expected = static_cast<double>(draws) / static_cast<double>(rules.size());
  EXPECT_GT(online, expected * 0.6) << online << " of " << draws << ", " << rules.size()
                                    << " rules, " << sites.size() << " sites";
  EXPECT_EQ(per_rule.size(), rules.size());
}

// Attention reaches its flash and online forms in one step: the normalization moved after
// p @ v and the softmax rewritten, with the rewritten graph's default schedule.
TEST(RewriteProposer, RecipesApplyRulesThatPayOnlyTogetherInOneStep) {
  spec::SpecOptions o;
  o.dim_overrides = {{"S", 128}, {"D", 16}};
  const ir::Graph g =
      spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/attention_causal.py", o);
  auto proposer = search::make_rewrite_proposer(g);
  std::set<std::string> reached;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const auto c = proposer->propose(baseline_state(g), seed);
    ASSERT_TRUE(c.has_value());
    if (c->move.rfind("normalize-late ", 0) != 0 || c->move.find("; ") == std::string::npos)
      continue;
    const std::string second = c->move.substr(c->move.find("; ") + 2);
    reached.insert(second.substr(0, second.find(' ')));
    EXPECT_EQ(c->rewrites, lines_of(c->move));
    const ir::Graph rewritten = rewrite::replay(g, c->rewrites);
    EXPECT_EQ(c->schedule, loops::to_text(loops::default_schedule(rewritten)));
  }
  EXPECT_TRUE(reached.count("flash")) << reached.size();
  EXPECT_TRUE(reached.count("online")) << reached.size();
}

TEST(RewriteProposer, NothingWhenNoRuleApplies) {
  const ir::Graph g =
      spec::compile_spec("add.py",
                         "import numpy as np\nDIMS = dict(N=8)\ndef add(x: \"f32[N]\", y: "
                         "\"f32[N]\") -> \"f32[N]\":\n    return x + y\n",
                         {});
  EXPECT_FALSE(search::make_rewrite_proposer(g)->propose(baseline_state(g), 1).has_value());
}

// The real evaluator: rewritten mla_decode kernels are compiled, verified and timed.
TEST(RewriteProposer, RewrittenCandidatesPassTheVerifierInARun) {
  const ir::Graph g = mla_decode();
  const fs::path dir =
      fs::temp_directory_path() / ("ollie-rewrite-search-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  store::RunInfo info;
  info.spec_path = "mla_decode.py";
  info.entry = "mla_decode";
  info.dims_json = "{}";
  info.machine_json = "{}";
  info.options_json = "{}";
  info.seed = 3;
  info.created = "2026-11-30T00:00:00Z";
  store::Store db = store::Store::create((dir / "run.db").string(), info);
  const std::string path = std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py";
  const verify::GraphAt graph_at = [path](const ir::DimBindings& dims) {
    spec::SpecOptions o;
    o.dim_overrides = dims;
    return spec::load_spec(path, o);
  };
  search::EvaluatorOptions eo;
  eo.verify.runner_path = OLLIE_RUNNER;
  eo.verify.cache_dir = (dir / "cache").string();
  eo.runner_path = OLLIE_RUNNER;
  eo.cache_dir = (dir / "cache").string();
  eo.bench_seconds = 0.02;
  eo.threads = 1;
  auto evaluator =
      search::make_local_evaluator(g, graph_at, search::baseline_candidate(g).source, eo);
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_rewrite_proposer(g));
  search::SearchOptions so;
  so.max_evals = 4;
  so.seed = 3;
  so.proposer_weights = {{"rewrite", 1.0}};
  so.give_up = 0;  // every candidate verified (the test checks that they pass)
  search::run_chains(
      g, db, *evaluator, proposers, so, [] { return false; }, nullptr);
  int rewritten = 0, passed = 0;
  for (int64_t id = 1; id <= db.counts().candidates; ++id) {
    const auto c = db.candidate(id);
    if (!c || c->proposer != "rewrite") continue;
    ++rewritten;
    EXPECT_FALSE(c->rewrites.empty());
    const auto e = db.evaluation_of(id);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->verdict, "pass") << c->rewrites << e->message;
    passed += e->verdict == "pass";
  }
  EXPECT_GE(rewritten, 3);
  EXPECT_EQ(passed, rewritten);
  fs::remove_all(dir);
}

}  // namespace
