// Tests of the search's chains with a deterministic stand-in evaluator (times derived
// from the candidate's source, no compiling): what the run database records, that no
// candidate is evaluated twice, that a run resumes where it stopped, that the same seed
// gives the same steps, that wrong candidates never become the best, and that a new best
// whose first timing lied is caught by the confirmation before it becomes the best.
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
#include "support/sha256.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

const ir::Graph& softmax() {
  static const ir::Graph g =
      spec::compile_spec("softmax.py",
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
    seen.push_back(sha256_hex(c.source));
    const uint64_t h = std::hash<std::string>{}(c.source);
    search::Evaluation e;
    if (c.proposer != "baseline" && h % 4 == 0) {
      e.verdict = verify::Verdict::Wrong;
      e.penalty = 0.25;
      return e;
    }
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds =
        c.proposer == "baseline" ? 1.5e-3 : 1e-3 + static_cast<double>(h % 1000) * 1e-6;
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
    dir = fs::temp_directory_path() /
          ("ollie-search-test-" + std::to_string(getpid()) + "-" + std::to_string(counter()++));
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

search::Candidate from_store(const store::Candidate& c) {
  search::Candidate out;
  out.source = c.source;
  out.proposer = c.proposer;
  return out;
}

search::StopReason run(store::Store& db, FakeEvaluator& evaluator, int64_t evals,
                       uint64_t seed = 7) {
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  search::SearchOptions options;
  options.max_evals = evals;
  options.seed = seed;
  return search::run_chains(
      softmax(), db, evaluator, proposers, options, [] { return false; }, nullptr);
}

TEST(Chains, EveryStepAndEvaluationIsRecordedAndNoCandidateIsEvaluatedTwice) {
  RunDir r;
  store::Store db = r.create();
  FakeEvaluator evaluator;
  EXPECT_EQ(run(db, evaluator, 25), search::StopReason::EvalBudget);
  const auto counts = db.counts();
  EXPECT_EQ(counts.evaluations, 25);
  EXPECT_EQ(evaluator.calls, 25);
  EXPECT_EQ(std::set<std::string>(evaluator.seen.begin(), evaluator.seen.end()).size(),
            evaluator.seen.size());
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

// --session-evals: this session's (this worker's) evaluations, whatever the run has.
TEST(Chains, ASessionBudgetCountsThisSessionsEvaluations) {
  RunDir r;
  FakeEvaluator first, second;
  {
    store::Store db = r.create();
    run(db, first, 10);
  }
  store::Store db = store::Store::open((r.dir / "run.db").string());
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  search::SearchOptions options;
  options.max_session_evals = 4;
  options.seed = 7;
  EXPECT_EQ(search::run_chains(
                softmax(), db, second, proposers, options, [] { return false; }, nullptr),
            search::StopReason::EvalBudget);
  EXPECT_EQ(second.calls, 4);
  EXPECT_EQ(db.counts().evaluations, 14);
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
  EXPECT_EQ(search::run_chains(
                softmax(), db, evaluator, proposers, options, [] { return false; }, nullptr),
            search::StopReason::EvalBudget);
  EXPECT_EQ(db.counts().evaluations, 12);
  EXPECT_GT(bug->calls, 0);
  EXPECT_GT(db.counts().events, 0);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2((r.dir / "run.db").c_str(), &raw, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(raw,
                         "SELECT count(*) FROM events WHERE kind = 'proposer-error' AND text LIKE "
                         "'buggy: internal error%rule broke an invariant%'",
                         -1, &q, nullptr),
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

// The true time of a candidate: the baseline 1.5 ms, any other 1..2 ms by its hash.
double truth(const search::Candidate& c) {
  if (c.proposer == "baseline") return 1.5e-3;
  return 1e-3 + static_cast<double>(std::hash<std::string>{}(c.source) % 1000) * 1e-6;
}

// A stand-in whose first timing of every third candidate is a lie (100x faster than the
// truth) and whose side-by-side comparisons tell the truth, as a noisy machine's one bad
// measurement and its re-timing would.
class LyingEvaluator : public search::Evaluator {
 public:
  static bool liar(const search::Candidate& c) {
    return c.proposer != "baseline" && std::hash<std::string>{}(c.source) % 3 == 0;
  }
  bool lies = true;        // false: every first timing is the truth
  bool contended = false;  // every comparison says the machine was busy
  search::Evaluation evaluate(const search::Candidate& c) override {
    ++calls;
    evaluated.insert(sha256_hex(c.source));
    search::Evaluation e;
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds = lies && liar(c) ? truth(c) / 100 : truth(c);
    e.ratio_vs_baseline = e.median_seconds / 1.5e-3;
    e.rounds = 5;
    return e;
  }
  std::optional<search::Comparison> compare(const search::Candidate& a,
                                            const search::Candidate& b) override {
    compared.push_back(sha256_hex(a.source));
    if (fail_compare) throw std::runtime_error("the comparison was cut off");
    search::Comparison c;
    c.median_seconds = c.min_seconds = truth(a);
    c.ratio = c.min_ratio = truth(a) / truth(b);
    c.rounds = 30;
    c.contended = contended;
    c.others_cpus = contended ? 1.5 : 0;
    return c;
  }
  int calls = 0;
  bool fail_compare = false;
  std::set<std::string> evaluated;
  std::vector<std::string> compared;
};

search::StopReason run_liar(store::Store& db, LyingEvaluator& evaluator, int64_t evals,
                            bool confirm = true, double* best_seconds = nullptr) {
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  search::SearchOptions options;
  options.max_evals = evals;
  options.seed = 5;
  options.confirm_new_best = confirm;
  return search::run_chains(
      softmax(), db, evaluator, proposers, options, [] { return false; },
      [&](const search::Progress& p) {
        if (best_seconds) *best_seconds = p.best_seconds;
      });
}

// Every evaluation row in id order: candidate id, source, proposer, ratio to the baseline.
struct Row {
  int64_t candidate;
  search::Candidate c;
  double ratio;
};
std::vector<Row> evaluation_rows(const fs::path& db) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(
                raw,
                "SELECT e.candidate, c.source, c.proposer, e.ratio_vs_baseline FROM evaluations e "
                "JOIN candidates c ON c.id = e.candidate ORDER BY e.id",
                -1, &q, nullptr),
            SQLITE_OK);
  std::vector<Row> rows;
  while (sqlite3_step(q) == SQLITE_ROW) {
    Row r;
    r.candidate = sqlite3_column_int64(q, 0);
    r.c.source = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
    r.c.proposer = reinterpret_cast<const char*>(sqlite3_column_text(q, 2));
    r.ratio = sqlite3_column_double(q, 3);
    rows.push_back(r);
  }
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return rows;
}

int64_t events_of(const fs::path& db, const std::string& kind) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(raw, "SELECT count(*) FROM events WHERE kind = ?", -1, &q, nullptr),
            SQLITE_OK);
  sqlite3_bind_text(q, 1, kind.c_str(), -1, SQLITE_TRANSIENT);
  int64_t n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return n;
}

// The fastest candidate by its latest evaluation's ratio (how `ollie optimize` picks).
Row best_by_ratio(const std::vector<Row>& rows) {
  std::map<int64_t, Row> latest;
  for (const Row& r : rows) latest[r.candidate] = r;
  Row best = latest.begin()->second;
  for (const auto& [id, r] : latest)
    if (r.ratio > 0 && r.ratio < best.ratio) best = r;
  return best;
}

TEST(Confirm, ANewBestWhoseFirstTimingLiedIsNotTheBest) {
  RunDir r;
  store::Store db = r.create();
  LyingEvaluator evaluator;
  double best_seconds = 0;
  run_liar(db, evaluator, 40, true, &best_seconds);
  const auto rows = evaluation_rows(r.dir / "run.db");
  int liars = 0;
  std::map<int64_t, Row> latest;
  for (const Row& row : rows) latest[row.candidate] = row;
  for (const auto& [id, row] : latest) {
    // Every candidate's evaluation that counts is the truth or slower than the best:
    // no lie survives as a claimed time below the truth that could be the best.
    if (LyingEvaluator::liar(row.c)) {
      ++liars;
      EXPECT_GT(row.ratio * 1.5e-3, best_seconds * (1 - 1e-9)) << "candidate " << id;
    }
  }
  ASSERT_GT(liars, 0) << "the test needs candidates whose first timing lies";
  // The best holds its true time (a candidate that lied may still be the truly fastest:
  // which ones lie follows the hash of their source).
  const Row best = best_by_ratio(rows);
  EXPECT_NEAR(best.ratio, truth(best.c) / 1.5e-3, 1e-9);
  EXPECT_NEAR(best_seconds, truth(best.c), 1e-9);
  EXPECT_LT(best_seconds, 1.5e-3);
  // Each lie that looked like a new best was compared and caught, and said so.
  EXPECT_GT(events_of(r.dir / "run.db", "not-confirmed"), 0);
  EXPECT_FALSE(evaluator.compared.empty());
  // A confirmed candidate has two evaluations; the store's current one is the confirmed.
  EXPECT_EQ(static_cast<int64_t>(rows.size()), db.counts().evaluations);
  // The budget counts candidates evaluated; the confirmations are extra rows.
  EXPECT_EQ(db.counts().candidates, 40);
  EXPECT_EQ(db.counts().evaluations, 40 + static_cast<int64_t>(evaluator.compared.size()));
  for (const auto& h : evaluator.compared) {
    const auto c = db.candidate_by_hash(h);
    ASSERT_TRUE(c.has_value());
    EXPECT_NEAR(db.evaluation_of(c->id)->ratio_vs_baseline * 1.5e-3, truth(from_store(*c)), 1e-12);
  }
}

TEST(Confirm, WithoutConfirmationTheLieWins) {
  // The scenario has teeth: trusted, a first timing that lied becomes the best.
  RunDir r;
  store::Store db = r.create();
  LyingEvaluator evaluator;
  run_liar(db, evaluator, 40, false);
  EXPECT_TRUE(LyingEvaluator::liar(best_by_ratio(evaluation_rows(r.dir / "run.db")).c));
  EXPECT_TRUE(evaluator.compared.empty());
}

TEST(Confirm, AComparisonDisturbedByOtherProcessesCannotMakeANewBest) {
  RunDir r;
  store::Store db = r.create();
  LyingEvaluator evaluator;
  evaluator.lies = false;
  evaluator.contended = true;
  double best_seconds = 0;
  run_liar(db, evaluator, 30, true, &best_seconds);
  ASSERT_FALSE(evaluator.compared.empty());  // candidates faster than the baseline were found...
  EXPECT_EQ(best_seconds, 1.5e-3);           // ...but none was trusted
  EXPECT_EQ(best_by_ratio(evaluation_rows(r.dir / "run.db")).c.proposer, "baseline");
  EXPECT_EQ(events_of(r.dir / "run.db", "not-confirmed"),
            static_cast<int64_t>(evaluator.compared.size()));
  EXPECT_EQ(events_of(r.dir / "run.db", "confirm"), 0);
}

TEST(Confirm, AConfirmationCutOffLeavesNoUnconfirmedEvaluationAndResumeRedoesIt) {
  RunDir r;
  std::string cut;
  {
    store::Store db = r.create();
    LyingEvaluator evaluator;
    evaluator.fail_compare = true;
    EXPECT_ANY_THROW(run_liar(db, evaluator, 40));
    ASSERT_EQ(evaluator.compared.size(), 1u);
    cut = evaluator.compared[0];
    // The candidate is there, its evaluation is not: it was never trusted.
    const auto c = db.candidate_by_hash(cut);
    ASSERT_TRUE(c.has_value());
    EXPECT_FALSE(db.evaluation_of(c->id).has_value());
  }
  store::Store db = store::Store::open((r.dir / "run.db").string());
  LyingEvaluator second;
  double best_seconds = 0;
  run_liar(db, second, 40, true, &best_seconds);
  EXPECT_EQ(second.evaluated.count(cut), 1u);  // evaluated again, as a cut-off evaluation is
  const Row best = best_by_ratio(evaluation_rows(r.dir / "run.db"));
  EXPECT_NEAR(best.ratio, truth(best.c) / 1.5e-3, 1e-9);  // its true time, not a lie
  // And a resume of the finished run evaluates and compares nothing it has.
  const int64_t before = db.counts().candidates;
  LyingEvaluator third;
  run_liar(db, third, before);
  EXPECT_EQ(third.calls, 0);
  EXPECT_TRUE(third.compared.empty());
}

}  // namespace
