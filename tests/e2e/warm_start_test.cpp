// End-to-end tests of warm starts (`ollie optimize --warm-start RUN.db ...` and the tuning
// database), driving the binary on a small softmax: a kernel of an earlier run is
// re-verified and re-timed (a stored kernel that became wrong is refused and never the
// best), the same graph at other dims is accepted and another spec left out with the
// reason, and the tuning database is written at the end and read by the next run.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>

#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;

CommandResult run(const std::string& env, const std::string& args) {
  const std::string cmd =
      "env -u OLLIE_CACHE_DIR -u XDG_CACHE_HOME " + env + " " + OLLIE_BINARY + " " + args + " 2>&1";
  return shell(cmd);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One ollie cache for the suite (the machine is calibrated once, the baselines compiled
// once); a test that needs a cache of its own gets the calibration copied into it.
class WarmStartCli : public ::testing::Test {
 protected:
  static fs::path root() {
    return fs::temp_directory_path() / ("ollie_warm_e2e_" + std::to_string(::getpid()));
  }
  static fs::path cache() { return root() / "cache"; }
  static void TearDownTestSuite() { fs::remove_all(root()); }
  void SetUp() override {
    dir_ = root() / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  static std::string env() { return "OLLIE_CACHE_DIR=" + cache().string(); }
  static std::string softmax() {
    return (fs::path(OLLIE_SOURCE_DIR) / "examples/softmax.py").string();
  }
  // A short run of examples/softmax.py at M=16, N=64 (flags added) into `out`.
  static CommandResult optimize(const std::string& env, const std::string& flags,
                                const fs::path& out, const std::string& spec = softmax(),
                                const std::string& dims = "M=16,N=64") {
    return run(env, "optimize " + spec + " --dims " + dims + " --bench-seconds 0.05 " + flags +
                        " -o " + out.string());
  }
  // A copy of a finished run's database with the hand-written softmax kernel added as a
  // free-form candidate whose stored evaluation passed 100x faster than the baseline (so
  // it is the run's best), its source changed by `edit` first. Returns its id.
  static int64_t with_free_form_kernel(const fs::path& run_db, const fs::path& copy,
                                       const std::function<std::string(std::string)>& edit) {
    fs::copy_file(run_db, copy, fs::copy_options::overwrite_existing);
    ollie::store::Store db = ollie::store::Store::open(copy.string());
    ollie::store::Candidate c;
    c.source = edit(read_file(fs::path(OLLIE_SOURCE_DIR) / "tests/e2e/kernels/softmax_rows.cpp"));
    c.proposer = "llm";
    ollie::store::Evaluation e;
    e.candidate = db.add_candidate(c);
    e.verdict = "pass";
    e.median_seconds = 1e-7;
    e.ratio_vs_baseline = 0.01;
    db.add_evaluation(e);
    db.checkpoint();
    return e.candidate;
  }
  // A cache of its own with the suite's calibration in it.
  static void calibrated_cache(const fs::path& dir) {
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(cache()))
      if (entry.path().filename().string().rfind("machine", 0) == 0)
        fs::copy_file(entry.path(), dir / entry.path().filename());
  }
  // The first run of the suite: the earlier run every test starts from.
  fs::path earlier_run() {
    const fs::path a = root() / "a";
    if (!fs::exists(a / "summary.md")) {
      const CommandResult r = optimize(env(), "--evals 3 --no-tuning-db", a);
      EXPECT_EQ(r.exit_code, 0) << r.out;
    }
    return a / "run.db";
  }
  fs::path dir_;
};

TEST_F(WarmStartCli, AStoredKernelIsReverifiedAndATamperedOneRefused) {
  const fs::path a = earlier_run();
  const fs::path good = dir_ / "good.db", bad = dir_ / "bad.db";
  const int64_t good_id = with_free_form_kernel(a, good, [](std::string s) { return s; });
  const int64_t bad_id = with_free_form_kernel(a, bad, [](std::string s) {
    const size_t at = s.find("sum += o[j]");
    EXPECT_NE(at, std::string::npos);
    return s.replace(at, 11, "sum -= o[j]");
  });
  const CommandResult r =
      optimize(env(), "--evals 6 --no-tuning-db --warm-start " + good.string() + " " + bad.string(),
               dir_ / "b");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string good_origin = good.string() + " #" + std::to_string(good_id);
  EXPECT_TRUE(has(r.out, "warm start: " + good_origin + " (same spec) -> candidate ")) << r.out;
  EXPECT_TRUE(
      has(r.out, "warm start: " + bad.string() + " #" + std::to_string(bad_id) + " refused: wrong"))
      << r.out;
  // The refused kernel is recorded with its verdict and never the answer.
  ollie::store::Store db = ollie::store::Store::open((dir_ / "b" / "run.db").string());
  int64_t good_here = 0;
  bool refused_recorded = false;
  for (int64_t id = 1; id <= db.counts().candidates; ++id) {
    const auto c = db.candidate(id);
    if (c->source.find("sum -= o[j]") != std::string::npos) {
      EXPECT_EQ(c->proposer, "warm-start");
      EXPECT_EQ(db.evaluation_of(id)->verdict, "wrong");
      refused_recorded = true;
    }
    if (c->source.find("sum += o[j]") != std::string::npos) good_here = id;
  }
  EXPECT_TRUE(refused_recorded);
  ASSERT_GT(good_here, 0);
  const auto good_eval = db.evaluation_of(good_here);
  ASSERT_EQ(good_eval->verdict, "pass");
  // The answer is at least as fast as the warm start re-timed here, and the summary says
  // where it came from.
  const std::string summary = read_file(dir_ / "b" / "summary.md");
  EXPECT_FALSE(has(read_file(dir_ / "b" / "softmax.cpp"), "sum -= o[j]"));
  // The baseline counts as exactly 1 in the final choice: the summary says so by name.
  const bool baseline = has(summary, "- origin of the best: the baseline");
  EXPECT_EQ(baseline, has(summary, "- best: the baseline itself, ")) << summary;
  std::smatch m;
  if (!baseline) {
    ASSERT_TRUE(std::regex_search(summary, m,
                                  std::regex(R"(candidate (\d+) from \S+, .*\(ratio ([0-9.]+)\))")))
        << summary;
  }
  EXPECT_LE(baseline ? 1.0 : std::stod(m[2]), good_eval->ratio_vs_baseline + 5e-4) << summary;
  if (!baseline && std::stoll(m[1]) == good_here)
    EXPECT_TRUE(has(summary, "- origin of the best: a warm start from " + good_origin +
                                 " (same spec), re-verified"))
        << summary;
  else  // the search's own, the baseline, or another of the warm starts (never the tampered)
    EXPECT_TRUE(has(summary, "- origin of the best: found by this run's search") ||
                has(summary, "- origin of the best: the baseline") ||
                has(summary, "- origin of the best: a warm start from "))
        << summary;
  EXPECT_TRUE(has(r.out, "- origin of the best: ")) << r.out;  // the final stdout lines
}

TEST_F(WarmStartCli, TheSameGraphAtOtherDimsIsAcceptedAndAnotherSpecIgnored) {
  const fs::path a = earlier_run();
  const fs::path good = dir_ / "good.db";
  const int64_t id = with_free_form_kernel(a, good, [](std::string s) { return s; });
  const std::string origin = good.string() + " #" + std::to_string(id);
  CommandResult r = optimize(env(), "--evals 3 --no-tuning-db --warm-start " + good.string(),
                             dir_ / "c", softmax(), "M=8,N=32");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "warm start: " + origin + " (same spec at dims M=16, N=64) -> candidate"))
      << r.out;
  // Another file with the same graph.
  const fs::path copy = dir_ / "softmax_copy.py";
  std::ofstream(copy) << "# a copy\n" << read_file(softmax());
  r = optimize(env(), "--evals 3 --no-tuning-db --warm-start " + good.string(), dir_ / "d",
               copy.string(), "M=8,N=32");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "warm start: " + origin + " (same graph at dims M=16, N=64) -> candidate"))
      << r.out;
  // Another spec: left out, with the reason.
  r = run(env(), "optimize " + (fs::path(OLLIE_SOURCE_DIR) / "examples/rmsnorm.py").string() +
                     " --dims T=16,D=64 --evals 2 --bench-seconds 0.05 --no-tuning-db "
                     "--warm-start " +
                     good.string() + " -o " + (dir_ / "e").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "warm start: " + good.string() + " skipped: a different graph")) << r.out;
  EXPECT_FALSE(has(r.out, "-> candidate")) << r.out;
}

TEST_F(WarmStartCli, TheTuningDatabaseIsWrittenAtTheEndAndReadByTheNextRun) {
  earlier_run();  // calibrates the suite's cache
  const fs::path own = dir_ / "cache";
  calibrated_cache(own);
  const std::string own_env = "OLLIE_CACHE_DIR=" + own.string();
  const fs::path tuning = own / "tuning.db";
  CommandResult r = optimize(own_env, "--evals 2", dir_ / "first");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(tuning));
  EXPECT_TRUE(has(r.out, "tuning database: added the best")) << r.out;
  r = optimize(own_env, "--evals 2", dir_ / "second");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The first run's best: the same kernel as this baseline, or a warm start evaluated.
  EXPECT_TRUE(has(r.out, "warm start: " + tuning.string() + " #1")) << r.out;
  // $XDG_CACHE_HOME/ollie without $OLLIE_CACHE_DIR; --tuning-db PATH.
  calibrated_cache(dir_ / "xdg" / "ollie");
  r = optimize("XDG_CACHE_HOME=" + (dir_ / "xdg").string(), "--evals 1", dir_ / "third");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "xdg" / "ollie" / "tuning.db"));
  r = optimize(own_env, "--evals 1 --tuning-db " + (dir_ / "chosen.db").string(), dir_ / "fourth");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "chosen.db"));
}

TEST_F(WarmStartCli, NoTuningDbLeavesNoFileAndBadInputIsAClearError) {
  earlier_run();
  const fs::path own = dir_ / "cache";
  calibrated_cache(own);
  const std::string own_env = "OLLIE_CACHE_DIR=" + own.string();
  CommandResult r = optimize(own_env, "--evals 1 --no-tuning-db", dir_ / "none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(own / "tuning.db"));
  EXPECT_FALSE(has(r.out, "tuning database")) << r.out;

  const std::string missing = (dir_ / "missing.db").string();
  r = optimize(own_env, "--evals 1 --no-tuning-db --warm-start " + missing, dir_ / "m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--warm-start: run database '" + missing + "' not found")) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "m" / "run.db"));  // nothing created
  const fs::path junk = dir_ / "junk.db";
  std::ofstream(junk) << "junk that is not a database\n";
  r = optimize(own_env, "--evals 1 --tuning-db " + junk.string(), dir_ / "j");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "tuning database '" + junk.string() + "'")) << r.out;
  EXPECT_TRUE(has(r.out, "--no-tuning-db")) << r.out;
  r = optimize(own_env, "--evals 1 --no-tuning-db --tuning-db x.db", dir_ / "k");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "not both")) << r.out;
  r = run(own_env, "optimize --resume " + (root() / "a" / "run.db").string() +
                       " --evals 1 --warm-start " + missing);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--warm-start starts a new run")) << r.out;
}

}  // namespace
