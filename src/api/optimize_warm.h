// The warm starts of `ollie optimize` (docs/search.md, "Warm starts"): which tuning
// database a session uses, the warm starts a new run gathers from --warm-start and the
// tuning database, the machine it records, and the best kernel added at the end.
#pragma once

#include <functional>
#include <string>

#include "api/api.h"
#include "search/warm_start.h"
#include "store/store.h"

namespace ollie::api {

// The tuning database of this session: --tuning-db, else tuning.db in ollie's cache
// directory ($OLLIE_CACHE_DIR, $XDG_CACHE_HOME/ollie or ~/.cache/ollie); "" with
// --no-tuning-db. UserError for flags that do not go together.
std::string tuning_db_path(const OptimizeOptions& f);

// The run's machine_json: cores and the machine fingerprint (search::machine_fingerprint)
// that warm starts compare.
std::string run_machine_json();

// For a new run: the kernels of --warm-start's run databases and of the tuning database
// (when `tuning_path` names a file that exists) usable for `graph`, with a line per file
// or kernel left out. UserError naming the file for one that cannot be read.
search::GatheredWarmStarts gather_for_new_run(
    const OptimizeOptions& f, const std::string& tuning_path, const ir::Graph& graph,
    const std::string& spec_sha256,
    const std::function<ir::Graph(const store::RunInfo&)>& graph_of_run);

// Adds the run's best kernel to the tuning database (created when missing); the line to
// print (a warning when it could not be written: the run's results are written anyway).
std::string add_to_tuning_db(const std::string& tuning_path, const store::Store& db,
                             const ir::Graph& graph, const store::Candidate& best,
                             double best_seconds, double ratio_vs_baseline);

}  // namespace ollie::api
