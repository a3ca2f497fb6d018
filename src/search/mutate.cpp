// The baseline candidate and the mutate proposer: random schedule moves, re-emitted. A
// candidate made by rewrites carries its chain; its schedule names the stages of the
// rewritten graph, so the mutator works on that graph (replayed from the chain).
#include "emit/emit.h"
#include "loops/loops.h"
#include "search/rewritten.h"
#include "search/search.h"

namespace ollie::search {

Candidate emitted_candidate(const ir::Graph& graph, const loops::Schedule& schedule,
                            const std::string& rewrites, const std::string& proposer,
                            const std::string& move) {
  Candidate c;
  c.schedule = loops::to_text(schedule);
  c.rewrites = rewrites;
  c.source = emit::emit_kernel(loops::lower(graph, schedule), graph, {.schedule_text = c.schedule});
  c.proposer = proposer;
  c.move = move;
  return c;
}

namespace {

class MutateProposer : public Proposer {
 public:
  explicit MutateProposer(const ir::Graph& graph) : graphs_(graph) {}
  std::string name() const override { return "mutate"; }
  bool cheap() const override { return true; }
  std::optional<Candidate> propose(const State& current, uint64_t seed) override {
    if (is_free_form(current.candidate)) return std::nullopt;
    const ir::Graph& graph = graphs_.at(current.candidate.rewrites);
    const loops::Schedule base =
        loops::parse_schedule(current.candidate.schedule, "<candidate schedule>");
    const std::optional<loops::Mutation> m = loops::mutate_schedule(graph, base, seed);
    if (!m) return std::nullopt;
    return emitted_candidate(graph, m->schedule, current.candidate.rewrites, name(), m->move);
  }

 private:
  RewrittenGraphs graphs_;
};

}  // namespace

Candidate baseline_candidate(const ir::Graph& graph) {
  return emitted_candidate(graph, loops::default_schedule(graph), "", "baseline",
                           "the default schedule");
}

std::unique_ptr<Proposer> make_mutate_proposer(const ir::Graph& graph) {
  return std::make_unique<MutateProposer>(graph);
}

}  // namespace ollie::search
