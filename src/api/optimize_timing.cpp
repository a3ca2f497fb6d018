// The timing regime of `ollie optimize`: chosen for a new run, recorded in its options,
// checked against the flags on resume (optimize_timing.h).
#include "api/optimize_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "support/error.h"

namespace ollie::api {

measure::Regime regime_for_new_run(const OptimizeOptions& f, const ir::Graph& graph, int threads) {
  if (f.cold) return {true, "--cold was given"};
  if (f.hot) return {false, "--hot was given"};
  const int t =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return measure::choose_regime(ir::cost(graph).compulsory_bytes, measure::llc_bytes(),
                                measure::l2_bytes(), t);
}

nlohmann::json regime_json(const measure::Regime& regime) {
  return {{"regime", measure::regime_name(regime.cold)}, {"why", regime.why}};
}

measure::Regime regime_of_run(const nlohmann::json& options_json, const OptimizeOptions& f) {
  measure::Regime recorded{false, "the run was made before ollie recorded a regime: hot caches"};
  const nlohmann::json timing = options_json.value("timing", nlohmann::json());
  if (timing.is_object()) {
    recorded.cold = timing.value("regime", std::string("hot")) == "cold";
    recorded.why = timing.value("why", std::string());
  }
  if ((f.cold && !recorded.cold) || (f.hot && recorded.cold))
    throw UserError(fmt::format(
        "{}: this run is timed with {} caches ({}); its times are comparable only under one "
        "regime, so a resumed or replayed run keeps it. Leave out {}, or start a new run with "
        "ollie optimize SPEC -o NEW_DIR {}",
        f.cold ? "--cold" : "--hot", measure::regime_name(recorded.cold), recorded.why,
        f.cold ? "--cold" : "--hot", f.cold ? "--cold" : "--hot"));
  return recorded;
}

std::string regime_text(const measure::Regime& regime) {
  return regime.cold ? "cold caches (flushed before every timed call)" : "hot caches";
}

std::string roofline_event_json(const measure::Roofline& roof) {
  return nlohmann::json{{"flops", roof.flops},
                        {"bytes", roof.bytes},
                        {"intensity", roof.intensity},
                        {"peak_flops", roof.peak_flops},
                        {"bandwidth", roof.bandwidth},
                        {"bound_seconds", roof.bound_seconds},
                        {"memory_bound", roof.memory_bound},
                        {"threads", roof.threads},
                        {"ceiling", roof.ceiling}}
      .dump();
}

}  // namespace ollie::api
