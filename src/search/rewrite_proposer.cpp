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
    const std::string& rule =
        rules[std::uniform_int_distribution<size_t>(0, rules.size() - 1)(rng)];
    std::vector<const rewrite::Site*> of_rule;
    for (const auto& s : sites)
      if (s.rule == rule) of_rule.push_back(&s);
    const rewrite::Site& site =
        *of_rule[std::uniform_int_distribution<size_t>(0, of_rule.size() - 1)(rng)];
    const ir::Graph rewritten = rewrite::apply(graph, site);
    const std::string line = rewrite::to_text(site);
    std::string next_chain = chain;
    if (!next_chain.empty() && next_chain.back() != '\n') next_chain += "\n";
    next_chain += line + "\n";
    return emitted_candidate(rewritten, loops::default_schedule(rewritten), next_chain, name(),
                             line);
  }

 private:
  RewrittenGraphs graphs_;
};

}  // namespace

std::unique_ptr<Proposer> make_rewrite_proposer(const ir::Graph& graph) {
  return std::make_unique<RewriteProposer>(graph);
}

}  // namespace ollie::search
