// The store's connection and its statements (store.cpp, store_open.cpp), internal to the
// store stage: one backend (SQLite or PostgreSQL, backend.h), every statement prepared
// once, the lock that serializes threads, and the row counts kept by one writer.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "store/backend.h"
#include "store/store.h"

namespace ollie::store::detail {

inline constexpr const char* kCandidateColumns =
    "id, hash, source, schedule, rewrites, parent, proposer, created";
inline constexpr const char* kEvaluationColumns =
    "id, candidate, verdict, message, penalty, certificate_json, median_seconds, min_seconds, "
    "mad_seconds, ratio_vs_baseline, rounds, cost, eval_seconds, created";
// A row's columns from `c0` on, in the order of the lists above.
Candidate read_candidate(const backend::Query& q, int c0);
Evaluation read_evaluation(const backend::Query& q, int c0);

class Db {
 public:
  explicit Db(std::unique_ptr<backend::Backend> backend) : conn(std::move(backend)) {}

  // Prepares every statement below (after the schema exists).
  void prepare();

  // Declared first: destroyed after the statements below.
  std::unique_ptr<backend::Backend> conn;
  std::recursive_mutex mu;
  bool in_transaction = false;
  // The row counts, read once and then kept up to date by every add_*: counting with SQL
  // scans whole tables (the passes count reads every evaluation row, certificates and
  // all), which a long run would pay on every step. Sound only when one process writes
  // the run (an SQLite file, optimize's lock); never kept for a shared backend. Dropped
  // on a rollback, and read again when next asked for.
  std::optional<Counts> counts_cache;
  // PostgreSQL: the inserts also add to the run's counters (schema::kPostgresCounters) and
  // take the worker as one more parameter; counts() sums the counters.
  bool counters = false;
  // This process's worker of a shared run (Store::add_worker); 0: none.
  int64_t worker = 0;
  // The machine kind best(), evaluation_here() and claim(here) are about (Store::
  // set_machine_kind; kinds.cpp); empty: every evaluation. `run_kind`: the run's own
  // machine's fingerprint, the kind of an evaluation without a worker (read when the kind
  // is set).
  std::string kind, run_kind;
  // The database's clock in seconds since 1970, as SQL of the backend's dialect.
  const char* now_sql() const {
    return conn->dialect() == backend::Dialect::PostgreSQL
               ? "extract(epoch from clock_timestamp())::float8"
               : "((julianday('now') - 2440587.5) * 86400.0)";
  }

  using Stmt = std::unique_ptr<backend::Statement>;
  Stmt run, insert_candidate, candidate_id_by_hash, candidate_by_id, candidate_by_hash,
      insert_evaluation, evaluation_of, insert_step, last_step, next_step, insert_event,
      insert_model_call, model_calls, best, counts, has_pass, predictions;
};

}  // namespace ollie::store::detail
