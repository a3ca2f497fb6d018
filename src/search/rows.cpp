// The run database's rows of candidates and evaluations, to and from the search's types.
#include "search/rows.h"

#include "support/error.h"

namespace ollie::search {

store::Evaluation to_row(int64_t candidate, const Evaluation& e, double cost) {
  store::Evaluation row;
  row.candidate = candidate;
  row.verdict = verify::verdict_name(e.verdict);
  row.message = e.message;
  row.penalty = e.penalty;
  row.certificate_json = e.certificate_json;
  row.median_seconds = e.median_seconds;
  row.min_seconds = e.min_seconds;
  row.mad_seconds = e.mad_seconds;
  row.ratio_vs_baseline = e.ratio_vs_baseline;
  row.rounds = e.rounds;
  row.cost = cost;
  row.eval_seconds = e.eval_seconds;
  return row;
}

Candidate from_row(const store::Candidate& c) {
  Candidate out;
  out.source = c.source;
  out.schedule = c.schedule;
  out.rewrites = c.rewrites;
  out.proposer = c.proposer;
  return out;
}

Evaluation evaluation_from_row(const store::Evaluation& row) {
  Evaluation e;
  e.verdict = verdict_of(row);
  e.message = row.message;
  e.penalty = row.penalty;
  e.certificate_json = row.certificate_json;
  e.median_seconds = row.median_seconds;
  e.min_seconds = row.min_seconds;
  e.mad_seconds = row.mad_seconds;
  e.ratio_vs_baseline = row.ratio_vs_baseline;
  e.rounds = row.rounds;
  e.eval_seconds = row.eval_seconds;
  return e;
}

verify::Verdict verdict_of(const store::Evaluation& row) {
  if (const std::optional<verify::Verdict> v = verify::verdict_from_name(row.verdict)) return *v;
  throw UserError("the run database's evaluation " + std::to_string(row.id) + " has the verdict '" +
                  row.verdict + "', which this version of ollie does not know");
}

}  // namespace ollie::search
