// Tests of the search's cost model (search/cost_model.h): the ridge regression recovers a
// known linear relation, Spearman's rank correlation on known data, predictions stored
// with the candidates and read back (also from a database of the schema before them),
// the screening's rules, and chains with a stand-in evaluator whose times the features
// predict: with the model on they evaluate fewer slow candidates, and with it off (or
// unable to screen) they propose exactly what they proposed without it.
#include "search/cost_model.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "spec/spec.h"
#include "store/store.h"
#include "support/sha256.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

// ---- the regression and the correlation

TEST(Ridge, RecoversAKnownLinearRelation) {
  search::RidgeRegression r(4, 1e-6);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0, 1);
  for (int i = 0; i < 200; ++i) {
    const std::vector<double> x = {normal(rng) * 3 + 10, normal(rng), normal(rng) * 0.1, 7.0};
    r.add(x, 0.5 + 2 * x[0] - 3 * x[1] + 0 * x[2] + 1e-6 * normal(rng));
  }
  r.fit();
  EXPECT_NEAR(r.weights()[0], 2, 1e-4);
  EXPECT_NEAR(r.weights()[1], -3, 1e-4);
  EXPECT_NEAR(r.weights()[2], 0, 1e-3);
  EXPECT_EQ(r.weights()[3], 0);  // constant: no weight, the intercept carries it
  EXPECT_NEAR(r.intercept(), 0.5, 1e-3);
  EXPECT_NEAR(r.predict({11, 1, 0, 7}), 0.5 + 22 - 3, 1e-3);
}

TEST(Ridge, ThePenaltyShrinksTowardTheMeanAndFewSamplesPredictTheMean) {
  search::RidgeRegression one(2, 1.0);
  one.add({1, 2}, 5);
  one.fit();
  EXPECT_EQ(one.predict({100, -100}), 5);
  search::RidgeRegression loose(1, 1e-9), tight(1, 100);
  for (int i = 0; i < 10; ++i) {
    loose.add({static_cast<double>(i)}, i);
    tight.add({static_cast<double>(i)}, i);
  }
  loose.fit();
  tight.fit();
  EXPECT_NEAR(loose.weights()[0], 1, 1e-6);
  EXPECT_GT(tight.weights()[0], 0);
  // On standardized inputs the penalty weighs as 100 samples: n / (n + 100) of the slope.
  EXPECT_NEAR(tight.weights()[0], 10.0 / 110, 1e-9);
}

TEST(Spearman, KnownData) {
  // Ranks of b with a tie: 1, 2, 3.5, 5, 3.5; covariance 8, variances 10 and 9.5.
  EXPECT_NEAR(search::spearman({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}), 8 / std::sqrt(95.0), 1e-12);
  EXPECT_NEAR(search::spearman({1, 2, 3, 4}, {40, 30, 20, 10}), -1, 1e-12);
  EXPECT_NEAR(search::spearman({0.1, 5, 2}, {1, 1000, 3}), 1, 1e-12);  // ranks, not values
  EXPECT_TRUE(std::isnan(search::spearman({1, 2, 3}, {4, 4, 4})));
  EXPECT_TRUE(std::isnan(search::spearman({1}, {2})));
}

// ---- stored predictions

struct RunDir {
  fs::path dir;
  RunDir() {
    static int n = 0;
    dir = fs::temp_directory_path() /
          ("ollie-cost-model-test-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~RunDir() { fs::remove_all(dir); }
  fs::path db() const { return dir / "run.db"; }
  store::Store create() const {
    store::RunInfo info;
    info.spec_path = "f.py";
    info.entry = "f";
    info.dims_json = info.machine_json = info.options_json = "{}";
    return store::Store::create(db().string(), info);
  }
};

int64_t add(store::Store& db, const std::string& source, std::optional<double> predicted,
            const std::string& verdict, double ratio) {
  store::Candidate c;
  c.source = source;
  c.proposer = "mutate";
  c.predicted = predicted;
  const int64_t id = db.add_candidate(c);
  store::Evaluation e;
  e.candidate = id;
  e.verdict = verdict;
  e.median_seconds = ratio > 0 ? ratio * 1e-3 : 0;
  e.ratio_vs_baseline = ratio;
  db.add_evaluation(e);
  return id;
}

TEST(StoredPredictions, AreReadBackWithTheMeasuredRatiosAndCorrelated) {
  RunDir r;
  store::Store db = r.create();
  add(db, "a", std::log(0.5), "pass", 0.6);
  add(db, "b", std::nullopt, "pass", 0.7);  // not predicted: left out
  add(db, "c", std::log(0.9), "pass", 0.8);
  add(db, "d", std::log(0.2), "wrong", 0);  // not measured: left out
  add(db, "e", std::log(1.2), "pass", 1.3);
  const int64_t f = add(db, "f", std::log(0.8), "pass", 2.0);
  // A confirmation is the candidate's latest evaluation: its ratio counts.
  store::Evaluation confirmed;
  confirmed.candidate = f;
  confirmed.verdict = "pass";
  confirmed.median_seconds = 0.7e-3;
  confirmed.ratio_vs_baseline = 0.7;
  db.add_evaluation(confirmed);
  const auto pairs = db.predictions();
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_NEAR(pairs[0].first, std::log(0.5), 1e-12);
  EXPECT_NEAR(pairs[0].second, 0.6, 1e-12);
  EXPECT_NEAR(pairs[3].first, std::log(0.8), 1e-12);
  EXPECT_NEAR(pairs[3].second, 0.7, 1e-12);
  // Predicted order a f c e, measured a (0.6) f (0.7) c (0.8) e (1.3): the same.
  const search::CostModelAccuracy a = search::cost_model_accuracy(db);
  EXPECT_EQ(a.candidates, 4);
  EXPECT_NEAR(a.spearman, 1.0, 1e-12);
  add(db, "g", std::log(0.1), "pass", 0.75);
  // predicted: a .5, c .9, e 1.2, f .8, g .1 -> ranks 2 4 5 3 1; measured .6 .8 1.3 .7 .75
  // -> ranks 1 4 5 2 3: d = 1 0 0 1 -2, rho = 1 - 6 * 6 / (5 * 24) = 0.7.
  EXPECT_NEAR(search::cost_model_accuracy(db).spearman, 0.7, 1e-12);
}

// A run database of schema version 1 (before the predictions): opened, it gains the
// column, and its rows read as before.
TEST(StoredPredictions, AnOlderDatabaseIsMigrated) {
  RunDir r;
  {
    store::Store db = r.create();
    add(db, "old", std::nullopt, "pass", 0.9);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(r.db().c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "ALTER TABLE candidates DROP COLUMN predicted; PRAGMA user_version = 1; "
                         "UPDATE meta SET value = '1' WHERE key = 'schema_version'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);
  store::Store db = store::Store::open(r.db().string());
  EXPECT_TRUE(db.predictions().empty());
  add(db, "new", std::log(0.5), "pass", 0.4);
  ASSERT_EQ(db.predictions().size(), 1u);
  EXPECT_EQ(db.candidate_by_hash(sha256_hex("old"))->proposer, "mutate");
  ASSERT_EQ(sqlite3_open(r.db().c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &q,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(q, 0))),
            std::to_string(store::Store::schema_version()));
  sqlite3_finalize(q);
  sqlite3_close(raw);
}

// ---- screening and the chains

const ir::Graph& matmul() {
  static const ir::Graph g =
      spec::compile_spec("matmul.py",
                         "import numpy as np\nDIMS = dict(M=48, K=32, N=64)\n"
                         "def matmul(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[M, N]\":\n"
                         "    return a @ b\n",
                         {});
  return g;
}

loops::Target target() { return {64, 2}; }

// A stand-in whose time is a fixed function of the model's inputs (more memory traffic
// and reuse distance cost, vectors and parallel loops help), so the features predict it.
class FeatureEvaluator : public search::Evaluator {
 public:
  FeatureEvaluator() : model_(matmul(), {}, target()) {
    base_ = truth(search::baseline_candidate(matmul()));
  }
  double truth(const search::Candidate& c) {
    const auto x = model_.inputs_of(c);
    if (!x) return 1;
    return std::exp(0.4 * (*x)[2] - 0.8 * (*x)[3] - 0.6 * (*x)[10] + 0.15 * (*x)[8]);
  }
  search::Evaluation evaluate(const search::Candidate& c) override {
    seen.push_back(sha256_hex(c.source));
    search::Evaluation e;
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.ratio_vs_baseline = truth(c) / base_;
    e.median_seconds = 1e-3 * e.ratio_vs_baseline;
    e.rounds = 5;
    if (c.proposer != "baseline" && e.ratio_vs_baseline > 1.0) ++slower_than_baseline;
    return e;
  }
  std::vector<std::string> seen;
  int slower_than_baseline = 0;

 private:
  search::CostModel model_;
  double base_ = 1;
};

struct Outcome {
  std::vector<std::string> seen;
  int slow = 0;
  search::Progress last;
  search::CostModelAccuracy accuracy;
  int64_t picked_steps = 0;  // steps whose note says the cost model picked the proposal
};

int64_t picked_steps(const fs::path& db) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(raw,
                               "SELECT count(*) FROM steps WHERE note LIKE '%(the cost model''s "
                               "pick of _)'",
                               -1, &q, nullptr),
            SQLITE_OK);
  const int64_t n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return n;
}

Outcome run(const search::CostModelOptions& cm, int64_t evals, uint64_t seed = 3) {
  RunDir r;
  store::Store db = r.create();
  FeatureEvaluator evaluator;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(matmul()));
  search::SearchOptions options;
  options.max_evals = evals;
  options.seed = seed;
  options.cost_model = cm;
  Outcome out;
  search::run_chains(
      matmul(), db, evaluator, proposers, options, [] { return false; },
      [&](const search::Progress& p) { out.last = p; });
  out.seen = evaluator.seen;
  out.slow = evaluator.slower_than_baseline;
  out.accuracy = search::cost_model_accuracy(db);
  out.picked_steps = picked_steps(r.db());
  return out;
}

search::CostModelOptions on() {
  search::CostModelOptions o;
  o.on = true;
  return o;
}

TEST(CostModelChains, OnEvaluatesFewerSlowCandidates) {
  const Outcome off = run({}, 60);
  const Outcome with = run(on(), 60);
  EXPECT_EQ(off.last.screened_out, 0);
  EXPECT_GT(with.last.screened_out, 50);
  EXPECT_GT(with.picked_steps, 30);  // of the 50 steps after the first 10 evaluations
  EXPECT_EQ(off.picked_steps, 0);
  EXPECT_LT(with.slow * 2, off.slow) << "on: " << with.slow << ", off: " << off.slow;
  // Its predictions were stored and rank the measured times well.
  EXPECT_GT(with.accuracy.candidates, 30);
  EXPECT_GT(with.accuracy.spearman, 0.3);  // 0.59 seen; random predictions: 0 +- 0.14
  EXPECT_EQ(off.accuracy.candidates, 0);   // off: nothing predicted
}

TEST(CostModelChains, OffOrUnableToScreenProposesExactlyAsWithoutIt) {
  const Outcome off = run({}, 30);
  search::CostModelOptions one = on();
  one.candidates = 1;  // predicts, never chooses
  search::CostModelOptions untrained = on();
  untrained.min_evaluations = 1000;
  EXPECT_EQ(run(one, 30).seen, off.seen);
  EXPECT_EQ(run(untrained, 30).seen, off.seen);
  // Screening changes what is evaluated after its first min_evaluations.
  const Outcome with = run(on(), 30);
  EXPECT_NE(with.seen, off.seen);
  ASSERT_GE(with.seen.size(), 10u);
  EXPECT_EQ(std::vector<std::string>(with.seen.begin(), with.seen.begin() + 10),
            std::vector<std::string>(off.seen.begin(), off.seen.begin() + 10));
}

TEST(CostModelChoose, FreeFormAndExpensiveProposalsPassUnscreened) {
  search::CostModel model(matmul(), on(), target());
  search::Candidate base = search::baseline_candidate(matmul());
  const auto x = model.inputs_of(base);
  ASSERT_TRUE(x.has_value());
  int asked = 0;
  auto more = [&](uint64_t) -> std::optional<search::Candidate> {
    ++asked;
    return std::nullopt;
  };
  auto always = [](const search::Candidate&) { return true; };
  // Not trained: the first proposal as it is, nothing more asked.
  EXPECT_EQ(model.choose(base, true, more, always, 1).candidate.source, base.source);
  EXPECT_FALSE(model.choose(base, true, more, always, 1).predicted.has_value());
  EXPECT_EQ(asked, 0);
  for (int i = 0; i < 10; ++i) model.observe(*x, 0.01 * i);
  ASSERT_TRUE(model.ready());
  search::Candidate free_form;
  free_form.source = "void f() {}";
  free_form.proposer = "llm";
  const auto c = model.choose(free_form, true, more, always, 1);
  EXPECT_EQ(c.candidate.source, free_form.source);
  EXPECT_FALSE(c.inputs.has_value());
  EXPECT_FALSE(c.predicted.has_value());
  EXPECT_EQ(asked, 0);
  const auto expensive = model.choose(base, false, more, always, 1);  // e.g. a model call each
  EXPECT_TRUE(expensive.predicted.has_value());
  EXPECT_EQ(asked, 0);
  model.choose(base, true, more, always, 1);
  EXPECT_EQ(asked, 7);  // candidates - 1 more
}

}  // namespace
