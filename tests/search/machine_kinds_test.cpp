// The chains of a run shared by workers of two machine kinds (docs/distributed.md, "Mixed
// machines"), with stand-in evaluators (no compiling) of which one machine is ten times
// slower: the slow kind times the baseline again (its own clock), its best and its
// restarts are read from its own evaluations only, and each new best is confirmed by the
// worker that found it, against a best timed on its own machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

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

// A machine `scale` times slower than the reference: the baseline 1.5 ms there, any other
// candidate 1..2 ms by its hash; comparisons tell the same truth.
class MachineEvaluator : public search::Evaluator {
 public:
  explicit MachineEvaluator(double scale) : scale_(scale) {}
  double truth(const search::Candidate& c) const {
    if (c.proposer == "baseline") return 1.5e-3 * scale_;
    return (1e-3 + static_cast<double>(std::hash<std::string>{}(c.source) % 1000) * 1e-6) * scale_;
  }
  search::Evaluation evaluate(const search::Candidate& c) override {
    evaluated.insert(sha256_hex(c.source));
    search::Evaluation e;
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds = truth(c);
    e.ratio_vs_baseline = truth(c) / (1.5e-3 * scale_);
    e.rounds = 5;
    return e;
  }
  std::optional<search::Comparison> compare(const search::Candidate& a,
                                            const search::Candidate& b) override {
    compared.emplace_back(sha256_hex(a.source), sha256_hex(b.source));
    search::Comparison c;
    c.median_seconds = c.min_seconds = truth(a);
    c.ratio = c.min_ratio = truth(a) / truth(b);
    c.rounds = 30;
    return c;
  }
  std::set<std::string> evaluated;
  std::vector<std::pair<std::string, std::string>> compared;  // (newcomer, best)

 private:
  double scale_;
};

// A worker of kind `kind` on the run in `db` until the run has `evals` candidates; the
// lowest best time its progress showed.
double work(store::Store& db, const std::string& kind, MachineEvaluator& evaluator, int64_t evals) {
  store::Worker w;
  w.name = kind;
  w.fingerprint = kind;
  w.machine_json = "{}";
  w.chains = 2;
  w = db.add_worker(w);
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  search::SearchOptions options;
  options.max_evals = evals;
  options.seed = 3 + static_cast<uint64_t>(w.id);
  options.restart_after = 4;  // restarts from the archive, often
  options.worker.on = true;
  options.worker.first_chain = w.first_chain;
  double best = 0;
  search::run_chains(
      softmax(), db, evaluator, proposers, options, [] { return false; },
      [&](const search::Progress& p) {
        if (p.best_seconds > 0 && (best == 0 || p.best_seconds < best)) best = p.best_seconds;
      });
  return best;
}

TEST(MachineKinds, EachKindTimesItsOwnBaselineAndKeepsItsOwnBest) {
  const fs::path dir = fs::temp_directory_path() / ("ollie-kinds-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "run.db").string();
  store::RunInfo info;
  info.spec_path = "softmax.py";
  info.entry = "softmax";
  info.dims_json = "{}";
  info.machine_json = R"({"fingerprint": "fast"})";
  info.options_json = "{}";
  MachineEvaluator fast(1), slow(10);
  double fast_best = 0;
  {
    store::Store db = store::Store::create(path, info);
    fast_best = work(db, "fast", fast, 15);
  }
  store::Store db = store::Store::open(path);
  const double slow_best = work(db, "slow", slow, 30);
  const std::string baseline = sha256_hex(search::baseline_candidate(softmax()).source);

  // The slow kind timed the baseline itself: its chains' clock is its own.
  EXPECT_TRUE(slow.evaluated.count(baseline));
  // Its best is one it timed: on the slow machine every kernel takes 10 ms or more (mixed
  // with the fast kind's, the best would be about 1 ms).
  EXPECT_GE(slow_best, 10e-3);
  EXPECT_LT(fast_best, 1.5e-3 + 1e-12);
  const auto slow_bests = db.best(50);
  ASSERT_FALSE(slow_bests.empty());
  for (const auto& [c, e] : slow_bests) {
    EXPECT_GE(e.median_seconds, 10e-3) << "candidate " << c.id;
    EXPECT_TRUE(slow.evaluated.count(c.hash)) << "candidate " << c.id;
  }
  const auto fast_bests = db.best_on("fast", 50);
  ASSERT_FALSE(fast_bests.empty());
  EXPECT_LT(fast_bests[0].second.median_seconds, 2e-3);
  // A new best is confirmed by the worker that found it, against a best of its own kind.
  for (const auto& [newcomer, best] : slow.compared) {
    EXPECT_TRUE(slow.evaluated.count(newcomer));
    EXPECT_TRUE(slow.evaluated.count(best));
  }
  // A candidate the fast kind evaluated is timed again on the slow one only when it would
  // be the slow kind's new best (or is the baseline): not every one of them.
  size_t again = 0;
  for (const std::string& h : fast.evaluated) again += slow.evaluated.count(h);
  EXPECT_LT(again, fast.evaluated.size());
  const auto kinds = db.machine_kinds();
  ASSERT_EQ(kinds.size(), 2u);
  fs::remove_all(dir);
}

}  // namespace
