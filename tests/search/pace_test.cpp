// Tests of giving up on slow candidates (docs/search.md, "Giving up on slow candidates"):
// the chain's limit (twice its current state, or what its temperature could accept),
// that a too-slow candidate is never accepted nor the best, and with the real evaluator
// that a deliberately slow kernel is given up quickly before verification (its call
// stopped by the runner, or its first calls' ratio) while a fair one is verified and
// timed with its rounds capped.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "../llm/fake_model.h"
#include "search/search.h"
#include "store/store.h"
#include "support/sha256.h"

namespace {

using namespace ollie;
using llm::testing::RunDir;
using llm::testing::softmax;
using llm::testing::softmax_at;

// Times from a hash of the source (1 to 4 ms, the baseline 1.5 ms); a candidate slower
// than the limit it is given is too slow. Records each candidate's limit.
class PacedEvaluator : public search::Evaluator {
 public:
  search::Evaluation evaluate(const search::Candidate& c) override { return evaluate_paced(c, {}); }
  search::Evaluation evaluate_paced(const search::Candidate& c,
                                    const search::GiveUp& give_up) override {
    limits[sha256_hex(c.source)] = give_up;
    const double seconds =
        c.proposer == "baseline"
            ? 1.5e-3
            : 1e-3 + static_cast<double>(std::hash<std::string>{}(c.source) % 3000) * 1e-6;
    search::Evaluation e;
    e.ratio_vs_baseline = seconds / 1.5e-3;
    if (give_up.ratio > 0 && e.ratio_vs_baseline > give_up.ratio) {
      e.verdict = verify::Verdict::TooSlow;
      return e;
    }
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds = seconds;
    e.rounds = 5;
    return e;
  }
  std::map<std::string, search::GiveUp> limits;  // by source hash
};

struct StepRow {
  int chain = 0;
  bool accepted = false;
  double temperature = 0, cost_current = 0;
  std::string hash, verdict;
};

std::vector<StepRow> steps_of(const std::string& db_path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(
      db,
      "SELECT s.chain, s.accepted, s.temperature, s.cost_current, c.hash, "
      "(SELECT verdict FROM evaluations e WHERE e.candidate = c.id ORDER BY e.id "
      "DESC LIMIT 1) FROM steps s JOIN candidates c ON c.id = s.proposed ORDER BY s.step",
      -1, &st, nullptr);
  std::vector<StepRow> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    StepRow r;
    r.chain = sqlite3_column_int(st, 0);
    r.accepted = sqlite3_column_int(st, 1) != 0;
    r.temperature = sqlite3_column_double(st, 2);
    r.cost_current = sqlite3_column_double(st, 3);
    r.hash = reinterpret_cast<const char*>(sqlite3_column_text(st, 4));
    r.verdict = reinterpret_cast<const char*>(sqlite3_column_text(st, 5));
    rows.push_back(r);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

void run(store::Store& db, PacedEvaluator& evaluator, double give_up, int chains) {
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  search::SearchOptions options;
  options.max_evals = 40;
  options.seed = 11;
  options.chains = chains;
  options.give_up = give_up;
  search::run_chains(
      softmax(), db, evaluator, proposers, options, [] { return false; }, nullptr);
}

TEST(GiveUp, TheLimitIsTwiceTheCurrentStateOrWhatAHotChainCouldAcceptAndTooSlowIsNeverAccepted) {
  RunDir r("ollie-pace-test-");
  store::Store db = r.create();
  PacedEvaluator evaluator;
  run(db, evaluator, 2.0, 4);  // temperatures 0.02, 0.04, 0.08, 0.16
  const auto base = db.candidate(1);
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(evaluator.limits.at(base->hash).ratio, 0) << "the baseline is never given up on";
  int too_slow = 0, hot = 0;
  std::set<std::string> seen = {base->hash};
  for (const StepRow& s : steps_of(db.path())) {
    if (!seen.insert(s.hash).second) continue;  // a stored evaluation reused: no new limit
    // Acceptance probability 1e-6 at T is a ratio of exp(13.8 T): 1.32 at 0.02, 9.1 at 0.16.
    const double factor = std::max(2.0, std::exp(-s.temperature * std::log(1e-6)));
    const double expected = std::exp(s.cost_current) * factor / 1.5e-3;
    const search::GiveUp& g = evaluator.limits.at(s.hash);
    EXPECT_NEAR(g.ratio, expected, 1e-9 * expected) << "chain " << s.chain;
    EXPECT_EQ(g.baseline_seconds, 1.5e-3);
    hot += factor > 2 ? 1 : 0;
    if (s.verdict == "too-slow") {
      ++too_slow;
      EXPECT_FALSE(s.accepted) << "a candidate given up on was accepted";
    }
  }
  EXPECT_GT(too_slow, 0);
  EXPECT_GT(hot, 0);  // the hottest chain's limit comes from its temperature
  const auto best = db.best(40);
  ASSERT_FALSE(best.empty());
  for (const auto& [c, e] : best) EXPECT_EQ(e.verdict, "pass");
  // Too slow for one chain, never evaluated as passing: no too-slow candidate is current.
  for (int chain = 0; chain < 4; ++chain) {
    const auto last = db.last_step(chain);
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(db.evaluation_of(last->current)->verdict, "pass");
  }
}

TEST(GiveUp, OffEveryProposalIsEvaluatedInFull) {
  RunDir r("ollie-pace-test-");
  store::Store db = r.create();
  PacedEvaluator evaluator;
  run(db, evaluator, 0, 2);
  for (const auto& [hash, g] : evaluator.limits) EXPECT_EQ(g.ratio, 0);
  for (const StepRow& s : steps_of(db.path())) EXPECT_EQ(s.verdict, "pass");
}

// Iterations of the slow kernel's spin: over 10 ms a call on fast cores (see below).
constexpr uint64_t kSlowSpin = 40000000;

// The real evaluator (compiler, runner, verifier) on softmax at M=8, N=32 (about a
// microsecond a call): the baseline's source with a spin loop at the top of the kernel.
std::string spinning(uint64_t iterations) {
  std::string source = search::baseline_candidate(softmax()).source;
  const size_t body = source.find('{', source.find("ollie_kernel("));
  source.insert(body + 1, "\n  for (volatile unsigned long long spin = 0; spin < " +
                              std::to_string(iterations) + "ULL; spin = spin + 1) {}\n");
  return source;
}

std::unique_ptr<search::Evaluator> real_evaluator(const RunDir& r) {
  search::EvaluatorOptions eo;
  eo.runner_path = OLLIE_RUNNER;
  eo.cache_dir = (r.dir / "cache").string();
  eo.threads = 1;
  eo.bench_seconds = 0.001;
  return search::make_local_evaluator(softmax(), softmax_at,
                                      search::baseline_candidate(softmax()).source, eo);
}

search::Candidate candidate(std::string source) {
  search::Candidate c;
  c.source = std::move(source);
  c.proposer = "mutate";
  return c;
}

TEST(GiveUp, ADeliberatelySlowKernelIsGivenUpBeforeVerificationAndAFairOneIsTimedWithCappedRounds) {
  RunDir r("ollie-pace-test-");
  auto evaluator = real_evaluator(r);
  // The ratio to the real baseline (about a microsecond); the call limit 10 x 2 x 50 ms +
  // 0.1 s (as if the baseline took 50 ms: room for a slow machine).
  const search::GiveUp twice{2.0, 0.05};
  // Seconds a call (and forever without the limit): its first call is stopped by the runner.
  const search::Evaluation hung = evaluator->evaluate_paced(candidate(spinning(1ULL << 40)), twice);
  EXPECT_EQ(hung.verdict, verify::Verdict::TooSlow) << hung.message;
  EXPECT_NE(hung.message.find("given up before verification: at least x"), std::string::npos)
      << hung.message;
  EXPECT_NE(hung.message.find("ran longer than its limit"), std::string::npos) << hung.message;
  EXPECT_LT(hung.eval_seconds, 20) << "the compile, then 1.1 s of it";
  // 40M volatile increments: 14 ms a call on this Zen 5 (10M took 3.4 ms, so two calls
  // stayed under the runner's 10 ms needed to trust a fastest of two), up to about 120 ms on
  // slower cores; thousands of times the baseline: given up after two calls each.
  // The probe's two calls are timing on a shared machine: under ctest -j2 one try in a few
  // hundred was not given up (it was then verified and timed, never accepted as fast), so
  // of three tries one must give up; the others' messages are kept for the report.
  search::Evaluation slow;
  std::string tries;
  for (int attempt = 0; attempt < 3; ++attempt) {
    slow = evaluator->evaluate_paced(candidate(spinning(kSlowSpin)), twice);
    if (slow.verdict == verify::Verdict::TooSlow) break;
    EXPECT_GT(slow.ratio_vs_baseline, 100) << slow.message;
    tries += "try " + std::to_string(attempt + 1) + ": " + verify::verdict_name(slow.verdict) +
             " " + slow.message + "\n";
  }
  EXPECT_EQ(slow.verdict, verify::Verdict::TooSlow) << tries;
  EXPECT_GT(slow.ratio_vs_baseline, 100) << slow.message;
  EXPECT_NE(slow.message.find("fastest call took"), std::string::npos) << slow.message;
  EXPECT_EQ(slow.median_seconds, 0);
  EXPECT_GT(slow.min_seconds, 0);
  // The same kernel when the chain could accept it: verified and timed, its rounds ended
  // by the cap (4 x the 1 ms budget) after two instead of five.
  const search::Evaluation fair =
      evaluator->evaluate_paced(candidate(spinning(kSlowSpin)), search::GiveUp{1e6, 1e-5});
  EXPECT_EQ(fair.verdict, verify::Verdict::Pass) << fair.message;
  EXPECT_EQ(fair.rounds, 2);
  EXPECT_GT(fair.ratio_vs_baseline, 100);
}

}  // namespace
