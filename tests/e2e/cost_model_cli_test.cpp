// `ollie optimize --cost-model on|off` end to end through the binary: the setting is
// recorded in the run (off by default), a resumed run keeps it and refuses another, a bad
// value is a clear error, and the summary and the run's `cost-model` event give the
// session's pace and, with the model on, what it screened out.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "e2e_util.h"

#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;

CommandResult ollie(const fs::path& cache, const std::string& args) {
  const std::string cmd =
      "OLLIE_CACHE_DIR=" + cache.string() + " " + OLLIE_BINARY + " " + args + " 2>&1";
  return shell(cmd);
}

std::string cost_model_of(const fs::path& db) {
  const auto options =
      nlohmann::json::parse(ollie::store::Store::open(db.string()).run().options_json);
  return options.value("cost_model", std::string("(none)"));
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CostModelCli, TheSettingIsRecordedKeptOnResumeAndSummarized) {
  const fs::path dir = fs::temp_directory_path() / ("ollie_cost_model_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path cache = dir / "cache";
  const std::string spec =
      (fs::path(OLLIE_SOURCE_DIR) / "examples/softmax.py").string() + " --dims M=16,N=64";

  const CommandResult bad =
      ollie(cache, "optimize " + spec + " --evals 1 --cost-model maybe -o " + (dir / "x").string());
  EXPECT_NE(bad.exit_code, 0) << bad.out;
  EXPECT_TRUE(has(bad.out, "--cost-model")) << bad.out;

  // Off by default: a run stopped at once (no budget) has recorded it.
  const CommandResult unbudgeted = ollie(cache, "optimize " + spec + " -o " + (dir / "b").string());
  EXPECT_EQ(unbudgeted.exit_code, 1) << unbudgeted.out;
  EXPECT_EQ(cost_model_of(dir / "b" / "run.db"), "off");
  const CommandResult asked_on =
      ollie(cache, "optimize " + spec + " --cost-model on -o " + (dir / "c").string());
  EXPECT_EQ(asked_on.exit_code, 1) << asked_on.out;
  EXPECT_EQ(cost_model_of(dir / "c" / "run.db"), "on");

  const CommandResult off =
      ollie(cache, "optimize " + spec + " --evals 2 --bench-seconds 0.05 --cost-model off -o " +
                       (dir / "a").string());
  ASSERT_EQ(off.exit_code, 0) << off.out;
  EXPECT_TRUE(has(off.out, "cost model off: this session 2 evaluations in")) << off.out;
  EXPECT_FALSE(has(off.out, "screened out")) << off.out;
  std::ifstream summary(dir / "a" / "summary.md");
  std::stringstream text;
  text << summary.rdbuf();
  EXPECT_TRUE(has(text.str(), "- cost model off: this session 2 evaluations")) << text.str();
  EXPECT_EQ(cost_model_of(dir / "a" / "run.db"), "off");

  const std::string db = (dir / "a" / "run.db").string();
  const CommandResult other =
      ollie(cache, "optimize --resume " + db + " --evals 3 --cost-model on");
  EXPECT_EQ(other.exit_code, 1) << other.out;
  EXPECT_TRUE(has(other.out, "this run was made with the cost model off")) << other.out;
  const CommandResult resumed =
      ollie(cache, "optimize --resume " + db + " --evals 3 --bench-seconds 0.05");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(has(resumed.out, "cost model off: this session 1 evaluation in")) << resumed.out;
  EXPECT_EQ(cost_model_of(dir / "a" / "run.db"), "off");
  fs::remove_all(dir);
}

}  // namespace
