// The rewrite proposer: one more tensor-IR rewrite (src/rewrite/) on the candidate's
// chain, then the rewritten graph's default schedule, emitted.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "search/rewritten.h"
#include "search/search.h"

namespace ollie::search {

namespace {

// A chain is replayed from the spec's graph for every proposal on its candidates; rules
// that undo each other (fold-scale and normalize-late, the associate forms) could grow it
// without end, so a chain stops growing at this many lines (schedule moves go on).
constexpr size_t kMaxChainLines = 24;

// Recipes: rules that pay only together, proposed as one step (1 draw in kRecipeOdds when
// the first rule applies): the normalization moved after p @ v, then the softmax over the
// keys in blocks (flash) or in one pass (online) — attention's known-good forms, which a
// chain of single random rules reaches rarely (the first step alone is rarely faster, so the
// chain tends to leave it before the second).
const std::vector<std::vector<std::string>> kRewriteRecipes = {{"normalize-late", "flash"},
                                                               {"normalize-late", "online"}};
constexpr int kRecipeOdds = 4;

// The sites of `rule` in `graph`.
std::vector<rewrite::Site> sites_of(const ir::Graph& graph, const std::string& rule) {
  std::vector<rewrite::Site> out;
  for (auto& s : rewrite::find_sites(graph))
    if (s.rule == rule) out.push_back(std::move(s));
  return out;
}

// Applies a random recipe's rules in order, each at a random site; the lines applied, or
// nothing when some rule of the drawn recipe has no site.
std::vector<std::string> apply_recipe(ir::Graph& graph, std::mt19937_64& rng) {
  const auto& recipe =
      kRewriteRecipes[std::uniform_int_distribution<size_t>(0, kRewriteRecipes.size() - 1)(rng)];
  ir::Graph g = graph;
  std::vector<std::string> lines;
  for (const auto& rule : recipe) {
    const std::vector<rewrite::Site> sites = sites_of(g, rule);
    if (sites.empty()) return {};
    const auto& site = sites[std::uniform_int_distribution<size_t>(0, sites.size() - 1)(rng)];
    g = rewrite::apply(g, site);
    lines.push_back(rewrite::to_text(site));
  }
  graph = std::move(g);
  return lines;
}

class RewriteProposer : public Proposer {
 public:
  explicit RewriteProposer(const ir::Graph& graph) : graphs_(graph) {}
  std::string name() const override { return "rewrite"; }
  bool cheap() const override { return true; }
  std::optional<Candidate> propose(const State& current, uint64_t seed) override {
    // Free-form source has no graph to rewrite.
    if (is_free_form(current.candidate)) return std::nullopt;
    const std::string& chain = current.candidate.rewrites;
    if (static_cast<size_t>(std::count(chain.begin(), chain.end(), '\n')) >= kMaxChainLines)
      return std::nullopt;
    const ir::Graph& graph = graphs_.at(chain);
    const std::vector<rewrite::Site> sites = rewrite::find_sites(graph);
    if (sites.empty()) return std::nullopt;
    // A rule first, uniformly among those that apply, then one of its sites: rules whose
    // sites multiply as they are applied (split-reduce's halves make two reductions, each
    // a new site) would otherwise crowd out the rules with one site (normalize-late,
    // flash, online).
    std::vector<std::string> rules;
    for (const auto& s : sites)
      if (std::find(rules.begin(), rules.end(), s.rule) == rules.end()) rules.push_back(s.rule);
    std::mt19937_64 rng(seed);
    if (std::uniform_int_distribution<int>(0, kRecipeOdds - 1)(rng) == 0) {
      ir::Graph rewritten = graph;
      const std::vector<std::string> lines = apply_recipe(rewritten, rng);
      if (!lines.empty()) return chained(chain, rewritten, lines);
    }
    const std::string& rule =
        rules[std::uniform_int_distribution<size_t>(0, rules.size() - 1)(rng)];
    std::vector<const rewrite::Site*> of_rule;
    for (const auto& s : sites)
      if (s.rule == rule) of_rule.push_back(&s);
    const rewrite::Site& site =
        *of_rule[std::uniform_int_distribution<size_t>(0, of_rule.size() - 1)(rng)];
    return chained(chain, rewrite::apply(graph, site), {rewrite::to_text(site)});
  }

 private:
  // The candidate of `chain` extended by `lines`, whose graph is `rewritten`: its default
  // schedule, emitted.
  Candidate chained(const std::string& chain, const ir::Graph& rewritten,
                    const std::vector<std::string>& lines) const {
    std::string next_chain = chain, move;
    if (!next_chain.empty() && next_chain.back() != '\n') next_chain += "\n";
    for (const auto& line : lines) {
      next_chain += line + "\n";
      move += (move.empty() ? "" : "; ") + line;
    }
    return emitted_candidate(rewritten, loops::default_schedule(rewritten), next_chain, name(),
                             move);
  }

  RewrittenGraphs graphs_;
};

}  // namespace

std::unique_ptr<Proposer> make_rewrite_proposer(const ir::Graph& graph) {
  return std::make_unique<RewriteProposer>(graph);
}

}  // namespace ollie::search
