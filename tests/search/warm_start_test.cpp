// Tests of warm starts (search/warm_start.h, store/tuning_db.h): the graph signature, what
// is gathered from a run database (same spec, same graph at other dims, a different spec
// or machine left out with the reason, unreadable files refused), the chains evaluating
// warm starts before they start from the best (a failing one refused), and the tuning
// database (matching, replacing, concurrent writers, foreign files left alone).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "search/warm_start.h"
#include "spec/spec.h"
#include "store/store.h"
#include "store/tuning_db.h"
#include "support/error.h"
#include "support/sha256.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

const char* kSoftmax =
    "import numpy as np\nDIMS = dict(M=8, N=32)\n"
    "def softmax(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
    "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
    "    return e / e.sum(axis=-1, keepdims=True)\n";
const char* kRmsnorm =
    "import numpy as np\nDIMS = dict(M=8, N=32)\n"
    "def softmax(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
    "    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6)\n";

ir::Graph compiled(const std::string& source, ir::DimBindings dims = {}) {
  spec::SpecOptions so;
  so.dim_overrides = std::move(dims);
  return spec::compile_spec("softmax.py", source, so);
}

ir::Graph graph_of_run(const store::RunInfo& run) {
  ir::DimBindings dims;
  if (run.dims_json.find("\"M\":4") != std::string::npos) dims = {{"M", 4}, {"N", 16}};
  return compiled(run.spec_source, dims);
}

struct TempDir {
  fs::path dir;
  TempDir() {
    static int n = 0;
    dir = fs::temp_directory_path() /
          ("ollie-warm-test-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
};

// A run database of `spec` at `graph`'s dims holding its baseline, one scheduled
// candidate (a mutate move) and one free-form candidate, all passing.
std::string make_run(const fs::path& dir, const std::string& spec, const ir::Graph& graph,
                     const std::string& fingerprint = search::machine_fingerprint()) {
  store::RunInfo info;
  info.spec_path = "softmax.py";
  info.spec_source = spec;
  info.spec_sha256 = sha256_hex(spec);
  info.entry = graph.entry;
  info.dims_json = search::dims_json(graph);
  info.machine_json = "{\"cores\": 2, \"fingerprint\": \"" + fingerprint + "\"}";
  info.options_json = "{}";
  const std::string path = (dir / "run.db").string();
  store::Store db = store::Store::create(path, info);
  const search::Candidate base = search::baseline_candidate(graph);
  search::State state;
  state.candidate = base;
  std::optional<search::Candidate> moved;
  auto mutate = search::make_mutate_proposer(graph);
  for (uint64_t seed = 1; !moved; ++seed) moved = mutate->propose(state, seed);
  const std::vector<std::pair<search::Candidate, double>> rows = {
      {base, 1.0}, {*moved, 0.8}, {{"// free-form\n" + base.source, "", "", "llm", ""}, 0.9}};
  for (const auto& [c, ratio] : rows) {
    store::Candidate row;
    row.source = c.source;
    row.schedule = c.schedule;
    row.proposer = c.proposer;
    store::Evaluation e;
    e.candidate = db.add_candidate(row);
    e.verdict = "pass";
    e.median_seconds = 1e-3 * ratio;
    e.ratio_vs_baseline = ratio;
    db.add_evaluation(e);
  }
  db.checkpoint();
  return path;
}

search::GatheredWarmStarts gather(const ir::Graph& graph, const std::string& spec,
                                  const std::vector<std::string>& runs,
                                  const store::TuningDb* tuning = nullptr) {
  search::WarmStartSources sources;
  sources.run_paths = runs;
  sources.tuning = tuning;
  sources.graph_of_run = graph_of_run;
  return search::gather_warm_starts(graph, sha256_hex(spec),
                                    search::baseline_candidate(graph).source, sources);
}

TEST(WarmStart, GraphSignatureIgnoresDimSizesOnly) {
  const ir::Graph a = compiled(kSoftmax);
  EXPECT_EQ(search::graph_signature(a), search::graph_signature(compiled(kSoftmax, {{"M", 4}})));
  EXPECT_EQ(search::graph_signature(a),
            search::graph_signature(compiled(std::string("# another file\n") + kSoftmax)));
  EXPECT_NE(search::graph_signature(a), search::graph_signature(compiled(kRmsnorm)));
  EXPECT_EQ(search::dims_json(a), "{\"M\":8,\"N\":32}");
}

TEST(WarmStart, SameSpecGivesItsScheduledAndFreeFormKernels) {
  TempDir t;
  const ir::Graph g = compiled(kSoftmax);
  const std::string run = make_run(t.dir, kSoftmax, g);
  const auto got = gather(g, kSoftmax, {run});
  ASSERT_EQ(got.starts.size(), 2u) << ::testing::PrintToString(got.notes);
  EXPECT_TRUE(got.notes.empty()) << ::testing::PrintToString(got.notes);
  // Fastest first; the scheduled one emitted again from its schedule.
  const search::Candidate& scheduled = got.starts[0].candidate;
  EXPECT_EQ(got.starts[0].origin, run + " #2");
  EXPECT_EQ(scheduled.proposer, "warm-start");
  EXPECT_EQ(scheduled.move, "from " + run + " #2 (same spec)");
  EXPECT_FALSE(scheduled.schedule.empty());
  EXPECT_EQ(got.starts[1].candidate.source.rfind("// free-form\n", 0), 0u);
  EXPECT_EQ(got.starts[1].candidate.move, "from " + run + " #3 (same spec)");
}

TEST(WarmStart, SameGraphAtOtherDimsIsEmittedForThisRunsDims) {
  TempDir t;
  const ir::Graph small = compiled(kSoftmax, {{"M", 4}, {"N", 16}});
  const std::string run = make_run(t.dir, kSoftmax, small);
  // The same spec at other dims, and another spec file with the same graph.
  const ir::Graph here = compiled(kSoftmax);
  auto got = gather(here, kSoftmax, {run});
  ASSERT_EQ(got.starts.size(), 2u) << ::testing::PrintToString(got.notes);
  EXPECT_EQ(got.starts[0].candidate.move, "from " + run + " #2 (same spec at dims M=4, N=16)");
  const std::string other = std::string("# another file\n") + kSoftmax;
  got = gather(compiled(other), other, {run});
  ASSERT_EQ(got.starts.size(), 2u) << ::testing::PrintToString(got.notes);
  EXPECT_EQ(got.starts[0].candidate.move, "from " + run + " #2 (same graph at dims M=4, N=16)");
  // The scheduled kernel is this graph's: its schedule lowered at M=8, N=32 again.
  EXPECT_EQ(got.starts[0].candidate.schedule,
            gather(compiled(kSoftmax), kSoftmax, {run}).starts[0].candidate.schedule);
}

TEST(WarmStart, ADifferentSpecOrMachineIsLeftOutWithTheReason) {
  TempDir t;
  fs::create_directories(t.dir / "a");
  fs::create_directories(t.dir / "b");
  const std::string run = make_run(t.dir / "a", kSoftmax, compiled(kSoftmax));
  auto got = gather(compiled(kRmsnorm), kRmsnorm, {run});
  EXPECT_TRUE(got.starts.empty());
  ASSERT_EQ(got.notes.size(), 1u);
  EXPECT_NE(got.notes[0].find("warm start: " + run + " skipped: a different graph"),
            std::string::npos)
      << got.notes[0];
  const std::string elsewhere = make_run(t.dir / "b", kSoftmax, compiled(kSoftmax), "another cpu");
  got = gather(compiled(kSoftmax), kSoftmax, {elsewhere});
  EXPECT_TRUE(got.starts.empty());
  ASSERT_EQ(got.notes.size(), 1u);
  EXPECT_NE(got.notes[0].find("measured on another machine (another cpu)"), std::string::npos);
}

TEST(WarmStart, UnreadableRunDatabasesAreClearErrorsNamingTheFile) {
  TempDir t;
  const ir::Graph g = compiled(kSoftmax);
  auto error_of = [&](const std::string& path) {
    try {
      gather(g, kSoftmax, {path});
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = (t.dir / "missing.db").string();
  EXPECT_NE(error_of(missing).find("--warm-start: run database '" + missing + "' not found"),
            std::string::npos)
      << error_of(missing);
  const std::string text = (t.dir / "text.db").string();
  std::ofstream(text) << "not a database\n";
  EXPECT_NE(error_of(text).find("'" + text + "' is not an ollie run database"), std::string::npos);
  const std::string tuning = (t.dir / "tuning.db").string();
  store::TuningDb::open(tuning, true);
  EXPECT_NE(error_of(tuning).find(tuning), std::string::npos);
  EXPECT_NE(error_of(tuning).find("leave"), std::string::npos) << error_of(tuning);
}

// Times and verdicts from markers in the source: "WRONG" fails, "FAST" takes 0.5 ms, the
// baseline 1.5 ms, anything else 1.2 ms.
class MarkedEvaluator : public search::Evaluator {
 public:
  search::Evaluation evaluate(const search::Candidate& c) override {
    search::Evaluation e;
    if (c.source.find("WRONG") != std::string::npos) {
      e.verdict = verify::Verdict::Wrong;
      e.message = "out0[0, 1]: 2 is not 1";
      return e;
    }
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds = c.proposer == "baseline"                     ? 1.5e-3
                       : c.source.find("FAST") != std::string::npos ? 0.5e-3
                                                                    : 1.2e-3;
    e.ratio_vs_baseline = e.median_seconds / 1.5e-3;
    e.rounds = 5;
    return e;
  }
};

TEST(WarmStart, ChainsEvaluateWarmStartsRefuseFailingOnesAndStartFromTheBest) {
  TempDir t;
  const ir::Graph g = compiled(kSoftmax);
  store::RunInfo info;
  info.spec_path = "softmax.py";
  info.entry = "softmax";
  info.dims_json = info.machine_json = info.options_json = "{}";
  store::Store db = store::Store::create((t.dir / "run.db").string(), info);
  const std::string base = search::baseline_candidate(g).source;
  auto warm = [&](const std::string& marker, const std::string& origin) {
    return search::WarmStart{
        {"// " + marker + "\n" + base, "", "", "warm-start", "from " + origin + " (same spec)"},
        origin};
  };
  search::SearchOptions options;
  options.max_evals = 8;
  options.warm_starts = {warm("WRONG", "a.db #4"), warm("FAST", "a.db #5"), warm("", "b.db #2")};
  std::vector<std::string> lines;
  options.on_warm_start = [&](const std::string& line) { lines.push_back(line); };
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(g));
  MarkedEvaluator evaluator;
  search::run_chains(
      g, db, evaluator, proposers, options, [] { return false; }, nullptr);

  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("warm start: a.db #4 refused: wrong (candidate 2: out0[0, 1]", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1],
            "warm start: a.db #5 (same spec) -> candidate 3: re-verified (quick), x0.333 of this "
            "run's baseline side by side");
  EXPECT_EQ(db.evaluation_of(2)->verdict, "wrong");  // recorded, never the best
  EXPECT_EQ(db.candidate(3)->proposer, "warm-start");
  const auto best = db.best(1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].first.id, 3);
  // Free-form warm starts cannot be moved by mutate: the chains fall back to scheduled
  // candidates; the archive's best stays the warm start, and the summary says so.
  EXPECT_EQ(search::origin_of(best[0].first, store::read_run_events(db.path(), "warm-start")),
            "a warm start from a.db #5 (same spec), re-verified and re-timed side by side with "
            "this run's baseline");
  store::Candidate mutated;
  mutated.id = 9;
  mutated.proposer = "mutate";
  EXPECT_EQ(search::origin_of(mutated, {}), "found by this run's search (proposer mutate)");
}

TEST(WarmStart, ChainsStartFromAScheduledWarmStartThatBeatsTheBaseline) {
  TempDir t;
  const ir::Graph g = compiled(kSoftmax);
  fs::create_directories(t.dir / "a");
  const std::string run = make_run(t.dir / "a", kSoftmax, g);
  auto gathered = gather(g, kSoftmax, {run});
  ASSERT_FALSE(gathered.starts.empty());
  // Make the scheduled warm start the fast one.
  search::SearchOptions options;
  options.max_evals = 6;
  options.chains = 2;
  options.warm_starts = {gathered.starts[0]};
  options.warm_starts[0].candidate.source += "\n// FAST\n";
  store::RunInfo info;
  info.spec_path = "softmax.py";
  info.entry = "softmax";
  info.dims_json = info.machine_json = info.options_json = "{}";
  store::Store db = store::Store::create((t.dir / "run.db").string(), info);
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(g));
  MarkedEvaluator evaluator;
  search::run_chains(
      g, db, evaluator, proposers, options, [] { return false; }, nullptr);
  // Each chain's first proposal (candidates 3 and 4) was made from the warm start
  // (candidate 2), not from the baseline (candidate 1).
  ASSERT_GE(db.counts().candidates, 4);
  EXPECT_EQ(db.candidate(3)->parent, 2);
  EXPECT_EQ(db.candidate(4)->parent, 2);
  EXPECT_EQ(db.best(1)[0].first.id, 2);
}

TEST(TuningDb, MatchesBySpecOrGraphOnThisMachineAndReplacesAKernelAddedAgain) {
  TempDir t;
  const std::string path = (t.dir / "sub" / "tuning.db").string();
  store::TuningDb db = store::TuningDb::open(path, true);
  auto kernel = [](const std::string& source, const std::string& spec, const std::string& sig,
                   const std::string& dims, const std::string& machine, double ratio) {
    store::TunedKernel k;
    k.source = source;
    k.schedule = "split out0 n 16";
    k.proposer = "mutate";
    k.spec_sha256 = spec;
    k.entry = "softmax";
    k.graph_signature = sig;
    k.dims_json = dims;
    k.machine = machine;
    k.seconds = ratio * 1e-3;
    k.ratio_vs_baseline = ratio;
    return k;
  };
  db.add(kernel("a", "S", "G", "{\"M\":8}", "here", 0.7));
  db.add(kernel("b", "S", "G", "{\"M\":4}", "here", 0.5));
  db.add(kernel("c", "T", "G", "{\"M\":8}", "here", 0.9));
  db.add(kernel("d", "U", "H", "{\"M\":8}", "here", 0.1));   // another graph
  db.add(kernel("e", "S", "G", "{\"M\":8}", "there", 0.1));  // another machine
  db.add(kernel("a", "S", "G", "{\"M\":8}", "here", 0.6));   // again: replaces its row
  EXPECT_EQ(db.count(), 5);
  const auto got = db.matching("S", "G", "{\"M\":8}", "here", 5);
  ASSERT_EQ(got.size(), 3u);
  // This run's dims first, then by ratio.
  EXPECT_EQ(got[0].source, "a");
  EXPECT_DOUBLE_EQ(got[0].ratio_vs_baseline, 0.6);
  EXPECT_EQ(got[1].source, "c");
  EXPECT_EQ(got[2].source, "b");
  EXPECT_EQ(got[0].origin, path + " #" + std::to_string(got[0].id));
}

TEST(TuningDb, ConcurrentWritersLoseNothing) {
  TempDir t;
  const std::string path = (t.dir / "tuning.db").string();
  store::TuningDb::open(path, true);
  auto writer = [&](int which) {
    store::TuningDb db = store::TuningDb::open(path, true);
    for (int i = 0; i < 40; ++i) {
      store::TunedKernel k;
      k.source = std::to_string(which) + ":" + std::to_string(i);
      k.machine = "here";
      db.add(k);
    }
  };
  std::thread a(writer, 1), b(writer, 2);
  a.join();
  b.join();
  EXPECT_EQ(store::TuningDb::open(path, false).count(), 80);
}

TEST(TuningDb, ForeignFilesAreRefusedAndLeftAlone) {
  TempDir t;
  const std::string text = (t.dir / "text.db").string();
  std::ofstream(text) << "not a database at all, just some text that is long enough\n";
  try {
    store::TuningDb::open(text, true);
    FAIL() << "opened a text file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("tuning database '" + text + "'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--no-tuning-db"), std::string::npos);
  }
  // A run database given by mistake gets no tables of ours.
  store::RunInfo info;
  info.spec_path = "x.py";
  info.dims_json = info.machine_json = info.options_json = "{}";
  const std::string run = (t.dir / "run.db").string();
  { store::Store::create(run, info); }
  EXPECT_THROW(store::TuningDb::open(run, true), UserError);
  EXPECT_EQ(store::Store::open(run).integrity_check(), "ok");
  EXPECT_THROW(store::TuningDb::open((t.dir / "none.db").string(), false), UserError);
}

}  // namespace
