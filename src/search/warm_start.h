// Warm starts (docs/search.md, "Warm starts"): a new run starts from the best kernels of
// earlier runs of the same spec, or of a spec with the same graph at other dims, measured
// on the same kind of machine. They come from run databases (--warm-start) and from the
// per-user tuning database; a kernel that carries a schedule (and rewrite chain) is
// emitted again for this run's graph from their text forms, a free-form one is taken as
// it is. The chains then evaluate each (re-verified, re-timed side by side with this
// run's baseline; a failing one is refused) before they start from the best.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "search/search.h"

namespace ollie::store {
class TuningDb;
struct Candidate;
struct RunInfo;
}  // namespace ollie::store

namespace ollie::search {

// What identifies this kind of machine for warm starts and the tuning database: CPU
// model, vector ISA and the CPUs this process may use ("model | isa | N cpus").
std::string machine_fingerprint();

// The graph's structure without the sizes bound to its dims: hex SHA-256 of its text form
// (ir::to_text) with the bindings left out. Two specs with the same signature build the
// same tensor IR up to dim sizes, so a schedule of one names the stages of the other.
std::string graph_signature(const ir::Graph& graph);

// The bound dims as the run database stores them: {"M": 16, "N": 64}.
std::string dims_json(const ir::Graph& graph);

struct WarmStartSources {
  std::vector<std::string> run_paths;       // --warm-start RUN.db ...
  const store::TuningDb* tuning = nullptr;  // the tuning database to read, if any
  int per_source = 5;                       // best kernels taken from each
  // A stored run's graph at its dims, from the spec text it recorded (the CLI compiles it).
  std::function<ir::Graph(const store::RunInfo&)> graph_of_run;
};

struct GatheredWarmStarts {
  std::vector<WarmStart> starts;  // distinct kernels, none the baseline
  std::vector<std::string>
      notes;  // "warm start: X skipped: <why>", one per file or kernel left out
};

// Reads the sources and emits their usable kernels for `graph` (the run's graph at its
// dims; `spec_sha256` its spec's hash, `baseline_source` its baseline). Each start's
// candidate has proposer "warm-start" and move "from X #id (same spec | same spec at
// dims ... | same graph at dims ...)". UserError naming the file for a run database that
// cannot be read.
GatheredWarmStarts gather_warm_starts(const ir::Graph& graph, const std::string& spec_sha256,
                                      const std::string& baseline_source,
                                      const WarmStartSources& sources);

// The line a warm start's evaluation gives (the run database's "warm-start" event and a
// progress line): "warm start: X #id refused: <verdict>: <message>" for a failing one,
// else "warm start: X #id (why) -> candidate N, re-verified, xR of the baseline".
std::string warm_start_line(const WarmStart& start, int64_t candidate, const Evaluation& e);

// Where the run's best came from, for the summary: "this run's search (proposer P)", or
// "a warm start from X #id (...), re-verified ..." when `warm_events` (the run's
// "warm-start" event texts) name the candidate.
std::string origin_of(const store::Candidate& best, const std::vector<std::string>& warm_events);

}  // namespace ollie::search
