// The timing regime of `ollie optimize` (docs/measurement.md): hot or cold caches, from
// --hot / --cold or chosen from the spec's working set, recorded in the run's options
// ("timing": {"regime", "why"}) and kept by a resumed or replayed run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/api.h"
#include "ir/ir.h"
#include "measure/measure.h"

namespace ollie::api {

// For a new run: the flag's regime, or measure::choose_regime of the graph's compulsory
// bytes against this machine's caches at the kernels' thread count (threads 0: every core).
measure::Regime regime_for_new_run(const OptimizeOptions& f, const ir::Graph& graph, int threads);

// The "timing" object of a run's options_json.
nlohmann::json regime_json(const measure::Regime& regime);

// The regime a run recorded (hot for a run made before regimes were recorded). A --cold or
// --hot that disagrees with it is a UserError: a run's times are comparable only under
// one regime.
measure::Regime regime_of_run(const nlohmann::json& options_json, const OptimizeOptions& f);

// The text of the `roofline` event each session writes when it starts (docs/run-database.md):
// the graph's FLOPs and compulsory bytes, the peaks at the kernels' thread count and the
// bound, for the report's roofline chart and lines (src/report/).
std::string roofline_event_json(const measure::Roofline& roof);

// "cold caches (flushed before every timed call)" or "hot caches".
std::string regime_text(const measure::Regime& regime);

}  // namespace ollie::api
