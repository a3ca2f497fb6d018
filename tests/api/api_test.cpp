// Tests of the C++ API (src/api/api.h) without the CLI: optimize driven by a recording
// observer on a small gelu with a budget of a few evaluations (the events in order, and
// the outputs it writes under a --symbol), and emit + verify of one kernel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/api.h"
#include "support/error.h"
#include "support/sha256.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ollie_api_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

api::SpecRef small_gelu() {
  return {std::string(OLLIE_SOURCE_DIR) + "/examples/gelu.py", "", "M=4,N=16"};
}

// Every event, as a letter per kind (S started, E evaluated, B new best, X stopped,
// V verifying, P verified, F finished), and the payloads the test checks.
struct Recorder : api::OptimizeObserver {
  std::string kinds;
  api::StartedEvent started_event;
  std::vector<api::ProgressEvent> progress;
  std::vector<api::NewBestEvent> bests;
  std::vector<api::VerifiedEvent> verdicts;
  api::FinishedEvent finished_event;
  std::vector<std::string> notes;

  void note(const std::string& line) override { notes.push_back(line); }
  void started(const api::StartedEvent& e) override {
    kinds += 'S';
    started_event = e;
  }
  void evaluated(const api::ProgressEvent& e) override {
    kinds += 'E';
    progress.push_back(e);
  }
  void new_best(const api::NewBestEvent& e) override {
    kinds += 'B';
    bests.push_back(e);
  }
  void stopped(search::StopReason) override { kinds += 'X'; }
  void verifying(int64_t) override { kinds += 'V'; }
  void verified(const api::VerifiedEvent& e) override {
    kinds += 'P';
    verdicts.push_back(e);
  }
  void finished(const api::FinishedEvent& e) override {
    kinds += 'F';
    finished_event = e;
  }
};

TEST(Api, OptimizeReportsItsEventsToTheObserverAndWritesTheOutputs) {
  const fs::path dir = fresh_dir("optimize");
  ::setenv("OLLIE_CACHE_DIR", (dir / "cache").c_str(), 1);
  api::OptimizeOptions o;
  o.spec = small_gelu();
  o.out_dir = (dir / "run").string();
  o.evals = 3;
  o.chains = 1;
  o.bench_seconds = 0.05;
  o.tuning_db = (dir / "tuning.db").string();
  o.symbol = "gelu_api";
  Recorder rec;
  const api::FinishedEvent done = api::optimize(o, rec);

  // started, evaluations (the first is the baseline: a new best), stopped, then the
  // verification of the best candidates until one passes, then finished.
  ASSERT_GE(rec.kinds.size(), 6u) << rec.kinds;
  EXPECT_EQ(rec.kinds.substr(0, 3), "SEB") << rec.kinds;
  EXPECT_EQ(rec.kinds.substr(rec.kinds.size() - 4), "XVPF") << rec.kinds;
  EXPECT_EQ(rec.started_event.entry, "gelu");
  EXPECT_EQ(rec.started_event.db_path, (dir / "run" / "run.db").string());
  EXPECT_FALSE(rec.started_event.resumed);
  ASSERT_FALSE(rec.progress.empty());
  EXPECT_EQ(rec.progress.back().progress.run_evaluations, 3);
  EXPECT_GT(rec.progress.back().roofline_fraction, 0);
  for (size_t i = 1; i < rec.bests.size(); ++i)
    EXPECT_LT(rec.bests[i].best_seconds, rec.bests[i - 1].best_seconds);
  ASSERT_EQ(rec.verdicts.size(), 1u);
  EXPECT_EQ(rec.verdicts[0].verdict, verify::Verdict::Pass) << rec.verdicts[0].message;

  // The outcome, as returned and as the finished event carried it.
  EXPECT_TRUE(done.written);
  EXPECT_EQ(done.reason, search::StopReason::EvalBudget);
  EXPECT_EQ(done.best_candidate, rec.finished_event.best_candidate);
  EXPECT_EQ(done.best_candidate, rec.verdicts[0].candidate);
  EXPECT_GT(done.best_seconds, 0);
  EXPECT_NE(done.tuning_note.find("tuning database: added"), std::string::npos) << done.tuning_note;
  EXPECT_TRUE(fs::exists(dir / "tuning.db"));
  ASSERT_GE(done.files.size(), 4u);
  EXPECT_EQ(done.files.front(), "gelu.cpp");
  EXPECT_EQ(done.files.back(), "report.html");  // the run's page, last (src/report/)
  EXPECT_EQ(done.files[done.files.size() - 2], "summary.md");
  for (const std::string& file : done.files) EXPECT_TRUE(fs::exists(dir / "run" / file)) << file;
  EXPECT_EQ(read_file(dir / "run" / "summary.md"), done.summary);
  EXPECT_NE(done.summary.find("# ollie optimize: gelu"), std::string::npos);

  // The written kernel exports the chosen name, its header declares it, and the
  // certificate is of the file as written.
  const std::string source = read_file(dir / "run" / "gelu.cpp");
  EXPECT_NE(source.find("extern \"C\" void gelu_api("), std::string::npos);
  EXPECT_EQ(source.find("ollie_kernel"), std::string::npos);
  EXPECT_NE(read_file(dir / "run" / "gelu.ollie.h").find("extern \"C\" void gelu_api("),
            std::string::npos);
  EXPECT_NE(read_file(dir / "run" / "certificate.json").find(sha256_hex(source)),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Api, OptimizeRefusesOptionsThatDoNotGoTogetherBeforeCreatingAnything) {
  const fs::path dir = fresh_dir("refused");
  api::OptimizeOptions o;
  o.spec = small_gelu();
  o.out_dir = (dir / "run").string();
  o.evals = 1;
  o.symbol = "not a name";
  Recorder rec;
  EXPECT_THROW(api::OptimizeRun::open(o, rec), UserError);
  o.symbol = "";
  o.resume = (dir / "other.db").string();
  EXPECT_THROW(api::OptimizeRun::open(o, rec), UserError);
  EXPECT_FALSE(fs::exists(dir / "run" / "run.db"));
  EXPECT_TRUE(rec.kinds.empty());
  fs::remove_all(dir);
}

TEST(Api, EmitsUnderASymbolAndVerifiesTheKernelByIt) {
  const api::SpecRef spec = small_gelu();
  const ir::Graph graph = api::load(spec);
  const api::EmittedKernel k = api::emit(graph, {.schedule = "", .symbol = "my_gelu"});
  EXPECT_NE(k.source.find("extern \"C\" void my_gelu("), std::string::npos);
  EXPECT_NE(k.header.find("extern \"C\" void my_gelu("), std::string::npos);
  EXPECT_NE(k.header.find("namespace my_gelu_dims {"), std::string::npos);
  EXPECT_FALSE(k.schedule.empty());
  verify::Options vo;
  vo.kernel_symbol = "my_gelu";
  const verify::Report report = api::verify(graph, k.source, api::graph_at(spec), vo);
  EXPECT_EQ(report.verdict, verify::Verdict::Pass) << report.message;
  // Under the default name, the adapter finds no my_gelu: the kernel does not link.
  const verify::Report wrong = api::verify(graph, k.source, api::graph_at(spec), {});
  EXPECT_NE(wrong.verdict, verify::Verdict::Pass);
  EXPECT_THROW(api::emit(graph, {.schedule = "", .symbol = "9lives"}), UserError);
}

}  // namespace
