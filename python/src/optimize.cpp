// ollie._ollie.optimize: api::optimize with its observer's events passed to a Python
// object (as dicts, on the calling thread, the GIL held only for the callback) and a stop
// check that turns Ctrl-C (Python's SIGINT handler) into the search's clean stop, as the
// CLI's first Ctrl-C does. Candidates run in the sandboxed runner, never in this process.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "bindings.h"

namespace ollie::python {
namespace {

// A dict of alternating keys and values: dict_of("a", 1, "b", x) is {"a": 1, "b": x}.
inline void put_items(nb::dict&) {}
template <typename Value, typename... Rest>
void put_items(nb::dict& d, const char* key, const Value& value, const Rest&... rest) {
  d[key] = value;
  put_items(d, rest...);
}
template <typename... KeysAndValues>
nb::dict dict_of(const KeysAndValues&... items) {
  nb::dict d;
  put_items(d, items...);
  return d;
}

nb::dict progress_dict(const api::ProgressEvent& e) {
  const search::Progress& p = e.progress;
  return dict_of("elapsed_seconds", p.elapsed_seconds, "evaluations", p.evaluations,
                 "run_evaluations", p.run_evaluations, "evals_per_minute", p.evals_per_minute,
                 "acceptance", p.acceptance, "best_seconds", p.best_seconds, "baseline_seconds",
                 p.baseline_seconds, "roofline_fraction", e.roofline_fraction, "last", p.last,
                 "llm_usage", e.llm_usage);
}

nb::dict finished_dict(const api::FinishedEvent& e) {
  return dict_of("reason", search::stop_reason_name(e.reason), "written", e.written, "out_dir",
                 e.out_dir.string(), "db_path", e.db_path, "files", e.files, "summary", e.summary,
                 "best_candidate", e.best_candidate, "best_seconds", e.best_seconds,
                 "baseline_seconds", e.baseline_seconds, "tuning_note", e.tuning_note);
}

// Calls `target.<event>(arg)` for each event, the argument made (a dict, mostly) only
// with the GIL held. A callback that raises stops the search; its exception is raised
// again when optimize returns (KeyboardInterrupt: a clean stop).
class PythonObserver : public api::OptimizeObserver {
 public:
  explicit PythonObserver(nb::object target) : target_(std::move(target)) {}

  void note(const std::string& line) override {
    call("note", [&] { return nb::str(line.c_str()); });
  }
  void started(const api::StartedEvent& e) override {
    call("started", [&] {
      return dict_of("entry", e.entry, "spec_path", e.spec_path, "db_path", e.db_path, "resumed",
                     e.resumed, "regime", e.regime_text, "regime_why", e.regime_why);
    });
  }
  void evaluated(const api::ProgressEvent& e) override {
    call("evaluated", [&] { return progress_dict(e); });
  }
  void new_best(const api::NewBestEvent& e) override {
    call("new_best", [&] {
      return dict_of("best_seconds", e.best_seconds, "baseline_seconds", e.baseline_seconds,
                     "evaluations", e.evaluations);
    });
  }
  void stopped(search::StopReason reason) override {
    call("stopped", [&] { return nb::str(search::stop_reason_name(reason)); });
  }
  void verifying(int64_t candidate) override {
    call("verifying", [&] { return nb::int_(candidate); });
  }
  void verified(const api::VerifiedEvent& e) override {
    call("verified", [&] {
      return dict_of("candidate", e.candidate, "verdict", verify::verdict_name(e.verdict),
                     "message", e.message);
    });
  }

  // The stop check: a failed callback, or Ctrl-C (Python's handler raised KeyboardInterrupt).
  bool should_stop() {
    nb::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      interrupted = true;
    }
    return interrupted || error_.has_value();
  }
  void raise_pending() {
    if (error_) {
      nb::python_error e = std::move(*error_);
      error_.reset();
      throw e;
    }
  }

  bool interrupted = false;

 private:
  // Python objects are made and released only with the GIL held: `make_arg` runs inside.
  template <typename MakeArg>
  void call(const char* method, MakeArg make_arg) {
    nb::gil_scoped_acquire locked;
    if (error_) return;
    try {
      target_.attr(method)(make_arg());
    } catch (nb::python_error& e) {
      // Ctrl-C lands in whichever Python code runs first: a callback is as good a place
      // as the stop check to turn it into the clean stop.
      if (e.matches(PyExc_KeyboardInterrupt))
        interrupted = true;
      else
        error_.emplace(std::move(e));
    }
  }
  nb::object target_;
  std::optional<nb::python_error> error_;
};

// The api's options from a dict whose keys are OptimizeOptions' field names (the Python
// layer checks the names and types first).
api::OptimizeOptions options_from(const nb::dict& d) {
  api::OptimizeOptions o;
  auto get = [&](const char* key, auto& field) {
    if (d.contains(key)) field = nb::cast<std::remove_reference_t<decltype(field)>>(d[key]);
  };
  get("spec_path", o.spec.spec_path);
  get("entry", o.spec.entry);
  get("dims", o.spec.dims);
  get("out_dir", o.out_dir);
  get("resume", o.resume);
  get("time", o.time);
  get("evals", o.evals);
  get("seed", o.seed);
  get("chains", o.chains);
  get("proposers", o.proposers);
  get("threads", o.threads);
  get("bench_seconds", o.bench_seconds);
  get("llm_protocol", o.llm_protocol);
  get("llm_base_url", o.llm_base_url);
  get("llm_model", o.llm_model);
  get("llm_key", o.llm_key);
  get("llm_max_tokens", o.llm_max_tokens);
  get("llm_temperature", o.llm_temperature);
  get("llm_token_budget", o.llm_token_budget);
  get("llm_cost_budget", o.llm_cost_budget);
  get("llm_prompt", o.llm_prompt);
  get("proposer_cmd", o.proposer_cmd);
  get("replay", o.replay);
  get("accept_weak", o.accept_weak);
  get("warm_start", o.warm_start);
  get("tuning_db", o.tuning_db);
  get("no_tuning_db", o.no_tuning_db);
  get("cost_model", o.cost_model);
  get("cold", o.cold);
  get("hot", o.hot);
  get("symbol", o.symbol);
  return o;
}

nb::dict optimize(const nb::dict& options, nb::object observer) {
  const api::OptimizeOptions o = options_from(options);
  PythonObserver bridge(std::move(observer));
  api::FinishedEvent done;
  {
    nb::gil_scoped_release unlocked;
    done = api::optimize(o, bridge, [&bridge] { return bridge.should_stop(); });
  }
  bridge.raise_pending();
  nb::dict out = finished_dict(done);
  out["interrupted"] = bridge.interrupted;
  return out;
}

}  // namespace

void bind_optimize(nb::module_& m) {
  m.def("optimize", &optimize, nb::arg("options"), nb::arg("observer"));
}

}  // namespace ollie::python
