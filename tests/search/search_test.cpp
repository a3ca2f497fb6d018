// Tests of the search's chains with a deterministic stand-in evaluator (times derived
// from the candidate's source, no compiling): what the run database records, that no
// candidate is evaluated twice, that a run resumes where it stopped, that the same seed
// gives the same steps, and that wrong candidates never become the best.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <algorithm>
#include <set>

#include "build/build.h"
#include "search/search.h"
#include "spec/spec.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

const ir::Graph& softmax() {
  static const ir::Graph g = spec::compile_spec(
      "softmax.py",
      "import numpy as np\nDIMS = dict(M=8, N=32)\n"
      "def softmax(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
      "    return e / e.sum(axis=-1, keepdims=True)\n",
      {});
  return g;
}

// Times from a hash of the source (1..2 ms); every fourth candidate (by hash) is wrong
// with a penalty, unless it is the baseline.
class FakeEvaluator : public search::Evaluator {
 public:
  search::Evaluation evaluate(const search::Candidate& c) override {
    ++calls;
    seen.push_back(build::sha256_hex(c.source));
    const uint64_t h = std::hash<std::string>{}(c.source);
    search::Evaluation e;
    if (c.proposer != "baseline" && h % 4 == 0) {
      e.verdict = "wrong";
      e.penalty = 0.25;
      return e;
    }
    e.verdict = "pass";
    e.penalty = 0;
    e.median_seconds = c.proposer == "baseline" ? 1.5e-3 : 1e-3 + static_cast<double>(h % 1000) * 1e-6;
    e.ratio_vs_baseline = e.median_seconds / 1.5e-3;
    e.rounds = 5;
    return e;
  }
  int calls = 0;
  std::vector<std::string> seen;
};

struct RunDir {
  fs::path dir;
  RunDir() {
    dir = fs::temp_directory_path() / ("ollie-search-test-" + std::to_string(getpid()) + "-" +
                                       std::to_string(counter()++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~RunDir() { fs::remove_all(dir); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  store::Store create() {
    store::RunInfo info;
    info.spec_path = "softmax.py";
    info.entry = "softmax";
    info.dims_json = "{}";
    info.machine_json = "{}";
    info.options_json = "{}";
    info.seed = 7;
    info.created = "2026-11-30T00:00:00Z";
    return store::Store::create((dir / "run.db").string(), info);
  }
};

search::StopReason run(store::Store& db, FakeEvaluator& evaluator, int64_t evals, uint64_t seed = 7) {
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  search::SearchOptions options;
  options.max_evals = evals;
  options.seed = seed;
  return search::run_chains(softmax(), db, evaluator, proposers, options, [] { return false; }, nullptr);
}

TEST(Chains, EveryStepAndEvaluationIsRecordedAndNoCandidateIsEvaluatedTwice) {
  RunDir r;
  store::Store db = r.create();
  FakeEvaluator evaluator;
  EXPECT_EQ(run(db, evaluator, 25), search::StopReason::EvalBudget);
  const auto counts = db.counts();
  EXPECT_EQ(counts.evaluations, 25);
  EXPECT_EQ(evaluator.calls, 25);
  EXPECT_EQ(std::set<std::string>(evaluator.seen.begin(), evaluator.seen.end()).size(), evaluator.seen.size());
  EXPECT_GE(counts.steps, 24);
  EXPECT_GT(counts.accepted_steps, 0);
  EXPECT_LT(counts.accepted_steps, counts.steps);
  // The best is a passing candidate, faster than the baseline's 1.5 ms.
  const auto best = db.best(3);
  ASSERT_FALSE(best.empty());
  EXPECT_EQ(best[0].second.verdict, "pass");
  EXPECT_LT(best[0].second.median_seconds, 1.5e-3);
  // Each chain's last step names a candidate that exists with its evaluation.
  for (int chain = 0; chain < 2; ++chain) {
    const auto last = db.last_step(chain);
    ASSERT_TRUE(last.has_value());
    ASSERT_TRUE(db.evaluation_of(last->current).has_value());
  }
}

TEST(Chains, AResumedRunContinuesWithoutReevaluating) {
  RunDir r;
  FakeEvaluator first, second;
  {
    store::Store db = r.create();
    run(db, first, 10);
  }
  store::Store db = store::Store::open((r.dir / "run.db").string());
  const int64_t steps_before = db.next_step();
  EXPECT_EQ(run(db, second, 22), search::StopReason::EvalBudget);
  EXPECT_EQ(db.counts().evaluations, 22);
  EXPECT_EQ(second.calls, 12);  // only the new ones; the baseline is not evaluated again
  for (const auto& h : second.seen)
    EXPECT_EQ(std::count(first.seen.begin(), first.seen.end(), h), 0) << "evaluated twice: " << h;
  EXPECT_GT(db.next_step(), steps_before);
}

// A proposer that fails with a bug (an InternalError) half the time: the run goes on with
// the others, and the database says what went wrong.
class BuggyProposer : public search::Proposer {
 public:
  std::string name() const override { return "buggy"; }
  std::optional<search::Candidate> propose(const search::State&, uint64_t seed) override {
    ++calls;
    if (seed % 2 == 0) throw InternalError("rule broke an invariant");
    return std::nullopt;
  }
  int calls = 0;
};

TEST(Chains, AProposerBugCostsAProposalNotTheRun) {
  RunDir r;
  store::Store db = r.create();
  FakeEvaluator evaluator;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  auto buggy = std::make_unique<BuggyProposer>();
  BuggyProposer* bug = buggy.get();
  proposers.push_back(std::move(buggy));
  search::SearchOptions options;
  options.max_evals = 12;
  options.proposer_weights = {{"mutate", 1.0}, {"buggy", 1.0}};
  EXPECT_EQ(search::run_chains(softmax(), db, evaluator, proposers, options, [] { return false; }, nullptr),
            search::StopReason::EvalBudget);
  EXPECT_EQ(db.counts().evaluations, 12);
  EXPECT_GT(bug->calls, 0);
  EXPECT_GT(db.counts().events, 0);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2((r.dir / "run.db").c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT count(*) FROM events WHERE kind = 'proposer-error' AND text LIKE "
                                    "'buggy: internal error%rule broke an invariant%'", -1, &q, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_GT(sqlite3_column_int64(q, 0), 0);
  sqlite3_finalize(q);
  sqlite3_close(raw);
}

TEST(Chains, TheSameSeedGivesTheSameSteps) {
  auto steps = [](uint64_t seed) {
    RunDir r;
    store::Store db = r.create();
    FakeEvaluator evaluator;
    run(db, evaluator, 15, seed);
    return evaluator.seen;
  };
  EXPECT_EQ(steps(11), steps(11));
  EXPECT_NE(steps(11), steps(12));
}

}  // namespace
