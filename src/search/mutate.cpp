// The baseline candidate and the mutate proposer: random schedule moves, re-emitted.
#include "emit/emit.h"
#include "loops/loops.h"
#include "search/search.h"

namespace ollie::search {

namespace {

Candidate emitted(const ir::Graph& graph, const loops::Schedule& schedule, const std::string& proposer,
                  const std::string& move) {
  Candidate c;
  c.schedule = loops::to_text(schedule);
  c.source = emit::emit_kernel(loops::lower(graph, schedule), graph, {.schedule_text = c.schedule});
  c.proposer = proposer;
  c.move = move;
  return c;
}

class MutateProposer : public Proposer {
 public:
  explicit MutateProposer(const ir::Graph& graph) : graph_(graph) {}
  std::string name() const override { return "mutate"; }
  std::optional<Candidate> propose(const State& current, uint64_t seed) override {
    if (current.candidate.schedule.empty() && current.candidate.proposer != "baseline") return std::nullopt;
    const loops::Schedule base = loops::parse_schedule(current.candidate.schedule, "<candidate schedule>");
    const std::optional<loops::Mutation> m = loops::mutate_schedule(graph_, base, seed);
    if (!m) return std::nullopt;
    return emitted(graph_, m->schedule, name(), m->move);
  }

 private:
  const ir::Graph& graph_;
};

}  // namespace

Candidate baseline_candidate(const ir::Graph& graph) {
  return emitted(graph, loops::default_schedule(graph), "baseline", "the default schedule");
}

std::unique_ptr<Proposer> make_mutate_proposer(const ir::Graph& graph) {
  return std::make_unique<MutateProposer>(graph);
}

}  // namespace ollie::search
