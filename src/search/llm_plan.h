// The llm proposer in ollie's own terms (docs/llm.md): what its prompt shows of a kernel
// (the graph after the rewrite chain, its stages, the chain, the schedule, the rewrites
// that apply), and an answer's ```schedule / ```rewrites blocks turned into an emitted
// candidate, or refused with the parser's or the legality check's reason.
#pragma once

#include <optional>
#include <string>

#include "ir/ir.h"
#include "llm/llm.h"
#include "search/rewritten.h"
#include "search/search.h"

namespace ollie::search {

// The kernel the prompt shows, in ollie's terms. `free_form`: it is C++ with no schedule
// (the stages are then the spec's, and a schedule answer starts from them).
struct KernelTerms {
  std::string graph, stages, rewrites, schedule, rewrite_sites;
};
KernelTerms kernel_terms(RewrittenGraphs& graphs, const std::string& rewrites,
                         const std::string& schedule, bool free_form);

// An answer's plan as a candidate (proposer "llm", schedule and chain set, so mutate and
// rewrite can move it), or why it was refused (a located SpecError for a malformed line,
// the ScheduleError for an illegal directive, the rewrite's refusal naming its line). A
// plan without a ```rewrites block keeps `chain` (the shown kernel's); one without a
// ```schedule block gets the rewritten graph's default schedule.
struct PlanOutcome {
  std::optional<Candidate> candidate;
  std::string refusal;
};
PlanOutcome candidate_from_plan(const ir::Graph& spec, RewrittenGraphs& graphs,
                                const llm::ExtractedPlan& plan, const std::string& chain);

}  // namespace ollie::search
