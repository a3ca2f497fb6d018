// What the report shows, gathered from a run database (internal to src/report/): every
// evaluated candidate as a point, each chain's best over the run, the baseline and the
// best kernel with its lineage and certificate, the roofline the run recorded, the model
// calls with what became of each answer, and the events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/run_view.h"
#include "store/store.h"

namespace ollie::report {

// One evaluated candidate (its latest evaluation decides).
struct Point {
  int64_t candidate = 0;
  int64_t ordinal = 0;      // 1 for the first candidate evaluated in the run, 2 next, ...
  double wall_seconds = 0;  // since the run was created, at its first evaluation
  double seconds = 0;       // its time on the search's clock; 0 when it did not pass timed
  std::string proposer;     // "baseline", "mutate", ...
  std::string verdict;      // "pass", "wrong", ...
  int chain = -1;           // the chain whose step proposed it; -1 for none (baseline, ...)
};

// A chain's best so far: a new point each time it improved.
struct BestStep {
  int64_t ordinal = 0;
  double wall_seconds = 0;
  double seconds = 0;
};
struct ChainBest {
  int chain = 0;
  std::vector<BestStep> steps;
};

// The roofline of the run's graph on its machine, as `optimize` recorded it (a
// `roofline` event); known = false for a run database without one.
struct Roof {
  bool known = false;
  double flops = 0, bytes = 0, intensity = 0;
  double peak_flops = 0, bandwidth = 0;  // FLOP/s and bytes/s at `threads`
  double bound_seconds = 0;
  int threads = 0;
  std::string ceiling;  // "DRAM" or "last-level cache"
  bool memory_bound = false;
};

// One ancestor of the best kernel: the candidate, its time, and the step that proposed it.
struct Ancestor {
  int64_t candidate = 0;
  std::string proposer;
  double seconds = 0;
  std::string note;  // the step's note ("mutate: split out0 n 8 -> pass"); may be empty
};

struct CallRow {
  store::ModelCall call;  // without request and answer
  std::string outcome;    // what became of the answer
};

struct RunData {
  std::string db_path;
  store::RunInfo run;
  store::RowMarks marks;
  int64_t passes = 0, accepted_steps = 0;
  std::vector<Point> points;  // by ordinal
  std::vector<ChainBest> chains;
  double baseline_seconds = 0;
  std::optional<store::Candidate> baseline;  // with its source
  std::optional<store::Candidate> best;      // with its source
  std::optional<store::Evaluation> best_eval;
  double best_seconds = 0;
  bool best_fully_verified = false;  // a final-verify event says it passed `full`
  std::vector<Ancestor> lineage;     // the best, its parent, ..., up to the first
  Roof roof;
  std::vector<CallRow> calls;
  std::vector<store::EventRow> events;
  std::string certificate_json;    // the best's certificate
  std::string certificate_origin;  // where it came from, for the page
  std::string state;               // "running" or the last stop event's reason
};

// Reads everything the report shows; UserError naming the file when it cannot.
RunData read_run_data(const std::string& db_path);

// Seconds since the epoch of an ISO 8601 UTC time ("2024-05-01T12:34:56.789Z"); 0 when
// it does not parse.
double iso_seconds(const std::string& iso);

}  // namespace ollie::report
