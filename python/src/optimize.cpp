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

nb::dict progress_dict(const api::ProgressEvent& e) {
  const search::Progress& p = e.progress;
  nb::dict d;
  d["elapsed_seconds"] = p.elapsed_seconds;
  d["evaluations"] = p.evaluations;
  d["run_evaluations"] = p.run_evaluations;
  d["evals_per_minute"] = p.evals_per_minute;
  d["acceptance"] = p.acceptance;
  d["best_seconds"] = p.best_seconds;
  d["baseline_seconds"] = p.baseline_seconds;
  d["roofline_fraction"] = e.roofline_fraction;
  d["last"] = p.last;
  d["llm_usage"] = e.llm_usage;
  return d;
}

nb::dict finished_dict(const api::FinishedEvent& e) {
  nb::dict d;
  d["reason"] = search::stop_reason_name(e.reason);
  d["written"] = e.written;
  d["out_dir"] = e.out_dir.string();
  d["db_path"] = e.db_path;
  d["files"] = e.files;
  d["summary"] = e.summary;
  d["best_candidate"] = e.best_candidate;
  d["best_seconds"] = e.best_seconds;
  d["baseline_seconds"] = e.baseline_seconds;
  d["tuning_note"] = e.tuning_note;
  return d;
}

// Calls `target.<event>(dict)` for each event. A callback that raises stops the search;
// its exception is raised again when optimize returns (KeyboardInterrupt: a clean stop).
class PythonObserver : public api::OptimizeObserver {
 public:
  explicit PythonObserver(nb::object target) : target_(std::move(target)) {}

  void note(const std::string& line) override {
    call_with([&] { return nb::object(nb::str(line.c_str())); }, "note");
  }
  void started(const api::StartedEvent& e) override {
    call_with(
        [&] {
          nb::dict d;
          d["entry"] = e.entry;
          d["spec_path"] = e.spec_path;
          d["db_path"] = e.db_path;
          d["resumed"] = e.resumed;
          d["regime"] = e.regime_text;
          d["regime_why"] = e.regime_why;
          return nb::object(d);
        },
        "started");
  }
  void evaluated(const api::ProgressEvent& e) override {
    call_with([&] { return nb::object(progress_dict(e)); }, "evaluated");
  }
  void new_best(const api::NewBestEvent& e) override {
    call_with(
        [&] {
          nb::dict d;
          d["best_seconds"] = e.best_seconds;
          d["baseline_seconds"] = e.baseline_seconds;
          d["evaluations"] = e.evaluations;
          return nb::object(d);
        },
        "new_best");
  }
  void stopped(search::StopReason reason) override {
    call_with([&] { return nb::object(nb::str(search::stop_reason_name(reason))); }, "stopped");
  }
  void verifying(int64_t candidate) override {
    call_with([&] { return nb::object(nb::int_(candidate)); }, "verifying");
  }
  void verified(const api::VerifiedEvent& e) override {
    call_with(
        [&] {
          nb::dict d;
          d["candidate"] = e.candidate;
          d["verdict"] = verify::verdict_name(e.verdict);
          d["message"] = e.message;
          return nb::object(d);
        },
        "verified");
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
  void call_with(MakeArg make_arg, const char* method) {
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
