// The llm proposer's plans: the prompt's view of a kernel in ollie's terms, and a
// ```schedule / ```rewrites answer replayed, checked and emitted (see llm_plan.h).
#include "search/llm_plan.h"

#include <fmt/format.h>

#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "support/error.h"
#include "support/strings.h"

namespace ollie::search {

namespace {

// Plans longer than these are refused before any work: every proposal on the candidate
// replays its chain and re-lowers its schedule (the search's own chains stop at 24 lines).
constexpr size_t kMaxDirectives = 200;
constexpr size_t kMaxRewrites = 48;

// The block's chain replayed on the spec's graph, one line at a time so that a refusal
// names the block's line; `chain` gets each site in its canonical text form.
ir::Graph replay_block(const ir::Graph& spec, const std::string& block, std::string& chain) {
  ir::Graph graph = spec;
  const std::vector<std::string> lines = strings::split_lines(block);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string text =
        strings::trim(lines[i].substr(0, lines[i].find('#')), strings::kLineBlanks);
    if (text.empty()) continue;
    try {
      const rewrite::Site site = rewrite::parse_site(text);
      graph = rewrite::apply(graph, site);
      chain += rewrite::to_text(site) + "\n";
    } catch (const UserError& e) {
      throw UserError(fmt::format("```rewrites block, line {} ('{}'): {}", i + 1, text, e.what()));
    }
  }
  return graph;
}

size_t line_count(const std::string& text) { return strings::nonempty_lines(text).size(); }

std::string plural(size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string move_of(const llm::ExtractedPlan& plan, const loops::Schedule& schedule,
                    const std::string& chain) {
  std::string rewrites = chain.empty() ? "no rewrites" : plural(line_count(chain), "rewrite");
  if (!plan.has_schedule) return fmt::format("llm rewrites ({}), the default schedule", rewrites);
  return fmt::format("llm schedule ({}{})", plural(schedule.directives.size(), "directive"),
                     plan.rewrites ? ", " + rewrites : "");
}

// Without the last newline: the prompt puts each value in a fence of its own.
std::string chomp(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

KernelTerms kernel_terms(RewrittenGraphs& graphs, const std::string& rewrites,
                         const std::string& schedule, bool free_form) {
  KernelTerms t;
  const std::string chain = free_form ? "" : rewrites;
  t.rewrites = chomp(chain);
  t.schedule = free_form ? "(none: the current kernel is C++ written by hand or by a model, not "
                           "generated; a schedule answer starts from the spec's stages shown)"
               : schedule.empty() ? "(empty: no directives)"
                                  : chomp(schedule);
  try {
    const ir::Graph& graph = graphs.at(chain);
    t.graph = chomp(ir::to_text(graph));
    t.stages = chomp(loops::describe_stages(graph));
    for (const rewrite::Site& site : rewrite::find_sites(graph))
      t.rewrite_sites += (t.rewrite_sites.empty() ? "" : "\n") + rewrite::to_text(site);
  } catch (const std::exception& e) {
    t.graph = t.stages = fmt::format("(unknown: {})", e.what());
  }
  return t;
}

PlanOutcome candidate_from_plan(const ir::Graph& spec, RewrittenGraphs& graphs,
                                const llm::ExtractedPlan& plan, const std::string& chain) {
  PlanOutcome out;
  if (!plan.problem.empty()) {
    out.refusal = plan.problem;
    return out;
  }
  try {
    std::string new_chain = plan.rewrites ? "" : chain;
    std::optional<ir::Graph> replayed;
    if (plan.rewrites) replayed = replay_block(spec, *plan.rewrites, new_chain);
    const ir::Graph& graph = replayed ? *replayed : graphs.at(new_chain);
    loops::Schedule schedule = plan.has_schedule
                                   ? loops::parse_schedule(plan.schedule, "```schedule block")
                                   : loops::default_schedule(graph);
    if (schedule.directives.size() > kMaxDirectives || line_count(new_chain) > kMaxRewrites) {
      out.refusal =
          fmt::format("the plan is too long ({}, {}; at most {} directives and {} rewrites)",
                      plural(schedule.directives.size(), "directive"),
                      plural(line_count(new_chain), "rewrite"), kMaxDirectives, kMaxRewrites);
      return out;
    }
    if (plan.has_schedule && schedule.directives.empty()) {
      out.refusal =
          "the ```schedule block has no directives: give the whole schedule (the plain loop "
          "nests are never the fastest kernel)";
      return out;
    }
    out.candidate =
        emitted_candidate(graph, schedule, new_chain, "llm", move_of(plan, schedule, new_chain));
  } catch (const UserError& e) {  // SpecError, ScheduleError, a rewrite that does not apply
    out.refusal = e.what();
  } catch (const std::exception& e) {
    out.refusal = fmt::format(
        "ollie failed on this plan (a bug in ollie, not in the answer; please report it): {}",
        e.what());
  }
  return out;
}

}  // namespace ollie::search
