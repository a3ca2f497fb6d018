// A run database read-only, whole (for `ollie report` and the live page of `ollie serve`):
// the run, every candidate, evaluation, step, event and model call as rows, opened with
// SQLITE_OPEN_READONLY so that a run still writing the file is never disturbed. The big
// texts (kernel sources, certificates, model requests and answers) are left out of the
// lists and read one at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace ollie::store {

// A step with the time it was written.
struct StepRow {
  Step step;
  std::string created;
};

// The largest id of each table: rows are only ever added, so these are the row counts, and
// any change means something new (what the live page polls).
struct RowMarks {
  int64_t candidates = 0, evaluations = 0, steps = 0, events = 0, model_calls = 0;
};

struct EventRow {
  int64_t id = 0;
  std::string kind, text, created;
};

class RunView {
 public:
  // Opens `path` read-only. UserError naming the file and what to do when it is missing,
  // not an SQLite file, not an ollie run database, damaged, or from a newer ollie.
  static RunView open(const std::string& path);
  RunView(RunView&&) noexcept;
  RunView& operator=(RunView&&) noexcept;
  ~RunView();

  const std::string& path() const;
  RunInfo run() const;
  // Every candidate by id, without its source.
  std::vector<Candidate> candidates() const;
  // Every evaluation by id, without its certificate.
  std::vector<Evaluation> evaluations() const;
  std::vector<StepRow> steps() const;  // by id
  std::vector<EventRow> events() const;
  // Every model call by id, without its request and answer.
  std::vector<ModelCall> model_calls() const;
  // One candidate with its source; one evaluation with its certificate.
  std::optional<Candidate> candidate(int64_t id) const;
  std::optional<Evaluation> evaluation(int64_t id) const;
  RowMarks marks() const;

  struct Impl;

 private:
  explicit RunView(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ollie::store
