// A small run database written through the store's API, for the report's tests (unit and
// end to end): a baseline, a faster candidate whose source tries to inject a script, a
// wrong one, two chains of steps, a model call, and the events `optimize` writes.
#pragma once

#include <filesystem>
#include <string>

#include "store/store.h"
#include "support/sha256.h"

namespace ollie_report_test {

// What the sample's numbers are, for the tests to check against.
inline constexpr double kBaselineSeconds = 2e-3;
inline constexpr double kBestRatio = 0.5;  // the best is 1 ms on the search's clock
inline constexpr const char* kInjection = "// </script><script>alert(1)</script>";

inline std::string certificate(const std::string& level) {
  return R"({"schema": "ollie-certificate/1", "level": ")" + level +
         R"(", "verdict": "pass", "worst_fraction_of_bound": 0.25, "suites": [
    {"name": "normal", "seed": 7, "dims": {"N": 64}, "elements": 64,
     "worst_fraction_of_bound": 0.25, "passed": true},
    {"name": "special-values", "seed": 8, "dims": {"N": 64}, "elements": 64,
     "worst_fraction_of_bound": 0.125, "passed": true}],
   "not_applicable": [], "not_run": []})";
}

// Writes the sample run into `path` (which must not exist).
inline void write_sample_run(const std::string& path) {
  using namespace ollie::store;
  RunInfo run;
  run.spec_path = "examples/softmax.py";
  run.spec_source = "def softmax(x: \"f32[N]\") -> \"f32[N]\": ...\n";
  run.spec_sha256 = ollie::sha256_hex(run.spec_source);
  run.entry = "softmax";
  run.dims_json = R"({"N": 64})";
  run.machine_json = R"({"cores": 2})";
  run.options_json = R"({"chains": 2})";
  run.created = "2026-01-01T00:00:00.000Z";
  Store db = Store::create(path, run);
  db.add_event("roofline", R"({"flops": 2e6, "bytes": 1e6, "intensity": 2, "peak_flops": 1e11,
      "bandwidth": 1e10, "bound_seconds": 1e-4, "memory_bound": true, "threads": 1,
      "ceiling": "DRAM"})");
  auto candidate = [&](const std::string& source, int64_t parent, const std::string& proposer,
                       const std::string& schedule, const std::string& created) {
    Candidate c;
    c.source = source;
    c.parent = parent;
    c.proposer = proposer;
    c.schedule = schedule;
    c.created = created;
    return db.add_candidate(c);
  };
  auto evaluate = [&](int64_t id, const std::string& verdict, double median, double ratio,
                      const std::string& created) {
    Evaluation e;
    e.candidate = id;
    e.verdict = verdict;
    e.median_seconds = median;
    e.ratio_vs_baseline = ratio;
    e.certificate_json = certificate("quick");
    e.created = created;
    db.add_evaluation(e);
  };
  const int64_t base =
      candidate("void kernel() {\n  loop();\n}\n", 0, "baseline", "", "2026-01-01T00:00:01.000Z");
  evaluate(base, "pass", kBaselineSeconds, 1.0, "2026-01-01T00:00:01.000Z");
  const int64_t fast =
      candidate(std::string("void kernel() {\n  ") + kInjection + "\n  fast_loop();\n}\n", base,
                "llm", "split out0 n 8; vectorize out0 n_i", "2026-01-01T00:00:30.000Z");
  evaluate(fast, "pass", 1.1e-3, kBestRatio, "2026-01-01T00:00:30.000Z");
  const int64_t wrong = candidate("void kernel() { wrong(); }\n", base, "mutate", "split out0 n 3",
                                  "2026-01-01T00:01:00.000Z");
  evaluate(wrong, "wrong", 0, 0, "2026-01-01T00:01:00.000Z");
  ModelCall call;
  call.proposer = "llm";
  call.request = "{}";
  call.answer = "<b>model text</b>";
  call.status = "ok";
  call.tokens_in = 1200;
  call.tokens_out = 300;
  call.cost = 0.01;
  call.seconds = 4.5;
  db.add_model_call(call);
  auto step = [&](int64_t n, int chain, int64_t proposed, bool accepted, const std::string& note) {
    Step s;
    s.step = n;
    s.chain = chain;
    s.proposed = proposed;
    s.current = accepted ? proposed : base;
    s.accepted = accepted;
    s.note = note;
    db.add_step(s);
  };
  step(0, 0, fast, true, "llm: model call 1, a fenced kernel -> pass");
  step(1, 1, wrong, false, "mutate: split out0 n 3 -> wrong");
  db.add_event("stop", "evaluation budget spent");
  db.add_event("final-verify", "candidate " + std::to_string(fast) + ": pass");
  db.checkpoint();
}

}  // namespace ollie_report_test
