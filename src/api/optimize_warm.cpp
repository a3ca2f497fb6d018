// The warm starts of `ollie optimize` (see optimize_warm.h).
#include "api/optimize_warm.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "measure/measure.h"
#include "store/tuning_db.h"
#include "support/error.h"

namespace ollie::api {

namespace fs = std::filesystem;

std::string tuning_db_path(const OptimizeOptions& f) {
  if (f.no_tuning_db && !f.tuning_db.empty())
    throw UserError("give either --tuning-db PATH or --no-tuning-db, not both");
  if (f.no_tuning_db) return "";
  if (!f.tuning_db.empty()) return f.tuning_db;
  return (fs::path(measure::default_cache_dir()) / "tuning.db").string();
}

std::string run_machine_json() {
  return nlohmann::json{{"cores", std::thread::hardware_concurrency()},
                        {"fingerprint", search::machine_fingerprint()}}
      .dump();
}

search::GatheredWarmStarts gather_for_new_run(
    const OptimizeOptions& f, const std::string& tuning_path, const ir::Graph& graph,
    const std::string& spec_sha256,
    const std::function<ir::Graph(const store::RunInfo&)>& graph_of_run) {
  std::optional<store::TuningDb> tuning;
  std::error_code ec;
  if (!tuning_path.empty() && fs::exists(tuning_path, ec))
    tuning.emplace(store::TuningDb::open(tuning_path, false));
  if (f.warm_start.empty() && !tuning) return {};
  search::WarmStartSources sources;
  sources.run_paths = f.warm_start;
  sources.tuning = tuning ? &*tuning : nullptr;
  sources.graph_of_run = graph_of_run;
  return search::gather_warm_starts(graph, spec_sha256, search::baseline_candidate(graph).source,
                                    sources);
}

std::string add_to_tuning_db(const std::string& tuning_path, const store::Store& db,
                             const ir::Graph& graph, const store::Candidate& best,
                             double best_seconds, double ratio_vs_baseline) {
  try {
    store::TunedKernel k;
    k.source = best.source;
    k.schedule = best.schedule;
    k.rewrites = best.rewrites;
    k.proposer = best.proposer;
    const store::RunInfo run = db.run();
    k.spec_sha256 = run.spec_sha256;
    k.entry = graph.entry;
    k.graph_signature = search::graph_signature(graph);
    k.dims_json = search::dims_json(graph);
    k.machine = search::machine_fingerprint();
    k.seconds = best_seconds;
    k.ratio_vs_baseline = ratio_vs_baseline;
    k.run_path = fs::absolute(db.path()).string();
    k.candidate = best.id;
    store::TuningDb tuning = store::TuningDb::open(tuning_path, true);
    const int64_t id = tuning.add(k);
    return fmt::format("tuning database: added the best (candidate {}) to {} as #{}\n", best.id,
                       tuning_path, id);
  } catch (const UserError& e) {
    return fmt::format("warning: the best was not added to the tuning database: {}\n", e.what());
  }
}

}  // namespace ollie::api
