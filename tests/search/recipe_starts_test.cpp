// Tests of recipe starts (search::recipe_starts): which recipes apply to a spec, that each
// start carries its chain and the rewritten graph's default schedule, the lines and
// origin a person reads, and the chains starting from a recipe start that beats the
// baseline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "search/search.h"
#include "search/warm_start.h"
#include "spec/spec.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

ir::Graph mla_decode(int64_t s) {
  spec::SpecOptions o;
  o.dim_overrides = {{"B", 1}, {"H", 2}, {"S", s}, {"L", 8}, {"DR", 4}, {"DN", 8}, {"DV", 8}};
  return spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py", o);
}

TEST(RecipeStarts, FlashInBlocksOfEachLengthThatFitsTwiceWithItsDefaultSchedule) {
  const ir::Graph g = mla_decode(512);
  const auto starts = search::recipe_starts(g);
  ASSERT_EQ(starts.size(), 2u);
  const char* blocks[] = {" 256\n", " 64\n"};
  for (size_t i = 0; i < starts.size(); ++i) {
    const search::Candidate& c = starts[i].candidate;
    EXPECT_EQ(c.proposer, "recipe");
    EXPECT_EQ(c.rewrites.rfind("normalize-late %", 0), 0u) << c.rewrites;
    EXPECT_NE(c.rewrites.find("\nflash %"), std::string::npos) << c.rewrites;
    EXPECT_NE(c.rewrites.find(blocks[i]), std::string::npos) << c.rewrites;
    EXPECT_EQ(c.move.rfind("recipe: normalize-late", 0), 0u) << c.move;
    EXPECT_EQ(starts[i].origin.rfind("the recipe normalize-late", 0), 0u) << starts[i].origin;
    // The chain replays, and the schedule is that graph's default one.
    const ir::Graph rewritten = rewrite::replay(g, c.rewrites);
    EXPECT_EQ(c.schedule, loops::to_text(loops::default_schedule(rewritten)));
    EXPECT_NE(c.source, search::baseline_candidate(g).source);
  }
  // Blocks of 256 need two of them: at 256 keys only the blocks of 64 remain.
  const auto short_cache = search::recipe_starts(mla_decode(256));
  ASSERT_EQ(short_cache.size(), 1u);
  EXPECT_NE(short_cache[0].candidate.rewrites.find(" 64\n"), std::string::npos);
}

// GQA decode has the same shape of problem: both recipes apply.
TEST(RecipeStarts, GqaDecodeGetsThemToo) {
  spec::SpecOptions o;
  o.dim_overrides = {{"B", 1}, {"S", 512}, {"KV", 2}, {"HD", 16}};
  const ir::Graph g = spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/gqa_decode.py", o);
  const auto starts = search::recipe_starts(g);
  ASSERT_EQ(starts.size(), 2u);
  for (const auto& s : starts)
    EXPECT_NE(s.candidate.rewrites.find("\nflash %"), std::string::npos) << s.candidate.rewrites;
}

TEST(RecipeStarts, NoneWithoutAttention) {
  // A softmax alone: no p @ v to move its normalization after.
  const ir::Graph softmax = spec::compile_spec("softmax.py",
                                               "import numpy as np\nDIMS = dict(M=8, N=512)\n"
                                               "def softmax(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
                                               "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
                                               "    return e / e.sum(axis=-1, keepdims=True)\n",
                                               {});
  EXPECT_TRUE(search::recipe_starts(softmax).empty());
}

TEST(RecipeStarts, LinesAndOriginSayRecipe) {
  const auto starts = search::recipe_starts(mla_decode(512));
  ASSERT_FALSE(starts.empty());
  search::Evaluation e;
  e.verdict = verify::Verdict::Pass;
  e.ratio_vs_baseline = 0.5;
  const std::string line = search::warm_start_line(starts[0], 3, e);
  EXPECT_EQ(line.rfind("recipe start: normalize-late %", 0), 0u) << line;
  EXPECT_NE(line.find("(its default schedule) -> candidate 3: verified (quick), x0.500 of this "
                      "run's baseline side by side"),
            std::string::npos)
      << line;
  e.verdict = verify::Verdict::Wrong;
  e.message = "out0[0]: 2 is not 1";
  EXPECT_EQ(
      search::warm_start_line(starts[0], 4, e),
      "recipe start: " + starts[0].origin + " refused: wrong (candidate 4: out0[0]: 2 is not 1)");
  store::Candidate best;
  best.id = 3;
  best.proposer = "recipe";
  best.rewrites = "normalize-late %23 lhs\nflash %25 256\n";
  EXPECT_EQ(search::origin_of(best, {}),
            "a recipe start (the rewrites normalize-late %23 lhs; flash %25 256 with their "
            "default schedule), timed side by side with this run's baseline");
}

// The baseline 1.5 ms, recipe starts 0.5 ms, anything else 1.2 ms.
class RecipeFastEvaluator : public search::Evaluator {
 public:
  search::Evaluation evaluate(const search::Candidate& c) override {
    search::Evaluation e;
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds = c.proposer == "baseline" ? 1.5e-3 : c.proposer == "recipe" ? 0.5e-3 : 1.2e-3;
    e.ratio_vs_baseline = e.median_seconds / 1.5e-3;
    e.rounds = 5;
    return e;
  }
};

TEST(RecipeStarts, ChainsStartFromARecipeStartThatBeatsTheBaseline) {
  const fs::path dir =
      fs::temp_directory_path() / ("ollie-recipe-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const ir::Graph g = mla_decode(512);
  search::SearchOptions options;
  options.max_evals = 5;
  options.chains = 2;
  options.warm_starts = search::recipe_starts(g);
  ASSERT_EQ(options.warm_starts.size(), 2u);
  std::vector<std::string> lines;
  options.on_warm_start = [&](const std::string& line) { lines.push_back(line); };
  store::RunInfo info;
  info.spec_path = "mla_decode.py";
  info.entry = "mla_decode";
  info.dims_json = info.machine_json = info.options_json = "{}";
  store::Store db = store::Store::create((dir / "run.db").string(), info);
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(g));
  RecipeFastEvaluator evaluator;
  search::run_chains(
      g, db, evaluator, proposers, options, [] { return false; }, nullptr);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("recipe start: ", 0), 0u) << lines[0];
  // The baseline is candidate 1, the recipe starts 2 and 3 (both as fast: the first is
  // the best); each chain's first proposal (candidates 4 and 5) is a move from it.
  ASSERT_GE(db.counts().candidates, 5);
  EXPECT_EQ(db.candidate(2)->proposer, "recipe");
  EXPECT_EQ(db.candidate(4)->parent, 2);
  EXPECT_EQ(db.candidate(5)->parent, 2);
  fs::remove_all(dir);
}

}  // namespace
