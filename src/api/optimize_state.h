// The state of one `optimize` run behind api::OptimizeRun (src/api/optimize*.cpp): the run
// database and its lock, the graph, the session's search options, evaluator, roofline and
// proposers. Internal to the api stage.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api.h"
#include "api/optimize_llm.h"
#include "api/optimize_shared.h"
#include "measure/measure.h"
#include "search/search.h"
#include "search/warm_start.h"
#include "store/store.h"

namespace ollie::api {

// Holds an exclusive lock on <db>.lock for the life of the run, so that two `ollie
// optimize` processes never run chains on one database (each would evaluate the same
// candidates). The kernel drops the lock when the process dies, however it dies.
class RunLock {
 public:
  explicit RunLock(const std::string& db_path);
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

 private:
  int fd_ = -1;
};

struct OptimizeRun::State {
  OptimizeOptions f;
  OptimizeObserver* observer = nullptr;
  bool resuming = false, replaying = false;
  std::string tuning_path;  // empty: no tuning database this session
  search::GatheredWarmStarts warm;
  std::optional<RunLock> lock;
  std::optional<store::Store> db;
  std::optional<store::Store> recorded;  // a replay's recorded run
  ir::Graph graph;
  std::filesystem::path out_dir;
  std::string db_path;  // as the user named it (--resume) or out_dir/run.db
  nlohmann::json options_json;
  measure::Regime regime;
  search::SearchOptions so;
  std::string symbol;  // the written kernel's exported name
  verify::GraphAt graph_at;
  search::EvaluatorOptions eo;
  search::Candidate baseline;
  std::unique_ptr<search::Evaluator> local_evaluator;
  std::optional<search::ReplayEvaluator> replay_evaluator;
  measure::Roofline roof;
  int threads = 1;
  std::optional<SessionModel> model;  // the llm proposer's
  search::LlmProposer* llm_proposer = nullptr;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  search::Progress last_progress;
  std::unique_ptr<Heartbeat> heartbeat;  // a worker of a shared run (optimize_shared.h)

  search::Evaluator& evaluator() {
    return replay_evaluator ? static_cast<search::Evaluator&>(*replay_evaluator) : *local_evaluator;
  }
  double roof_fraction(double seconds) const {
    return seconds > 0 ? roof.bound_seconds / seconds : 0.0;
  }
};

// "01:23" or "1:02:03".
std::string clock_text(double seconds);
// "1.234 ms"
std::string ms(double seconds);
// "12 model calls, 3,400 tokens in, 120 out, cost 0.0123" for progress and the summary.
std::string usage_text(const search::LlmUsage& u);
// The spec's graph at the run's dims, from the run database (not the spec file, which
// may have changed since).
ir::Graph graph_of_run(const store::RunInfo& info);

}  // namespace ollie::api
