// Recipe starts (search.h, docs/search.md "Recipe starts"): the spec's graph after each
// known-good rewrite recipe that applies to it, with the rewritten graph's default
// schedule, so that a short run starts from attention's flash form rather than hoping
// that random rewrites reach it.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "search/rewritten.h"
#include "search/search.h"

namespace ollie::search {

namespace {

// One step of a recipe: a rule and the text of its form ("" for any form: the first
// site of the rule whatever its form).
struct RecipeStep {
  std::string rule, form;
};

// The recipes, the most promising first. Each is the normalization moved after p @ v
// and the softmax over the keys in blocks (flash): the block length varies with the
// cache the block's keys and values should stay in (docs/rewrites.md, flash).
const std::vector<std::vector<RecipeStep>>& recipes() {
  static const std::vector<std::vector<RecipeStep>> all = {
      {{"normalize-late", ""}, {"flash", "256"}},
      {{"normalize-late", ""}, {"flash", "64"}},
  };
  return all;
}

// The first site of `step` in `graph`; nullopt when the rule has none in that form.
std::optional<rewrite::Site> first_site(const ir::Graph& graph, const RecipeStep& step) {
  for (const rewrite::Site& s : rewrite::find_sites(graph)) {
    if (s.rule != step.rule) continue;
    const std::string text = rewrite::to_text(s);
    const std::string form = text.substr(text.rfind(' ') + 1);
    if (step.form.empty() || form == step.form) return s;
  }
  return std::nullopt;
}

}  // namespace

std::vector<WarmStart> recipe_starts(const ir::Graph& graph) {
  std::vector<WarmStart> out;
  std::set<std::string> sources = {baseline_candidate(graph).source};
  for (const auto& recipe : recipes()) {
    ir::Graph g = graph;
    std::string chain, move;
    bool applies = true;
    for (const RecipeStep& step : recipe) {
      const auto site = first_site(g, step);
      if (!site) {
        applies = false;
        break;
      }
      g = rewrite::apply(g, *site);
      const std::string line = rewrite::to_text(*site);
      chain += line + "\n";
      move += (move.empty() ? "" : "; ") + line;
    }
    if (!applies) continue;
    Candidate c = emitted_candidate(g, loops::default_schedule(g), chain, "recipe",
                                    "recipe: " + move + " (its default schedule)");
    if (!sources.insert(c.source).second) continue;
    out.push_back({std::move(c), "the recipe " + move});
  }
  return out;
}

}  // namespace ollie::search
