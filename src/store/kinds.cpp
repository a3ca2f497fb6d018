// Machine kinds of a shared run (store.h, docs/distributed.md "Mixed machines"): every
// evaluation was timed on its worker's machine (an evaluation without a worker, on the
// run's own), and times of two machine kinds do not compare, so the best and the archive
// are read per kind.
#include <mutex>

#include "store/db.h"
#include "store/store.h"
#include "support/error.h"

namespace ollie::store {

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

// The run's own machine's fingerprint (run.machine_json's "fingerprint"; "" when none).
std::string read_run_kind(detail::Db& db) {
  auto st = db.conn->prepare(
      db.conn->dialect() == backend::Dialect::PostgreSQL
          ? "SELECT coalesce(machine_json::json ->> 'fingerprint', '') FROM run WHERE id = 1"
          : "SELECT coalesce(json_extract(machine_json, '$.fingerprint'), '') FROM run "
            "WHERE id = 1");
  backend::Query q(*st, "reading the run's machine");
  return q.next() ? q.col_text(0) : std::string();
}

// The evaluation columns prefixed by `alias.`.
std::string prefixed(const char* columns, const std::string& alias) {
  std::string out, column;
  for (const char* p = columns;; ++p) {
    if (*p == ',' || *p == '\0') {
      out += (out.empty() ? "" : ", ") + alias + "." + column;
      column.clear();
      if (*p == '\0') break;
    } else if (*p != ' ') {
      column += *p;
    }
  }
  return out;
}

// SQL: the machine kind of evaluation `e` (left-joined with its worker `w`) is ?K, the
// run's own kind ?R.
std::string on_kind(const std::string& w, int k, int r) {
  return "coalesce(" + w + ".fingerprint, ?" + std::to_string(r) + ") = ?" + std::to_string(k);
}

}  // namespace

void Store::set_machine_kind(const std::string& fingerprint) {
  Lock lock(db_->mu);
  db_->kind = fingerprint;
  if (!fingerprint.empty() && db_->run_kind.empty()) db_->run_kind = read_run_kind(*db_);
}

const std::string& Store::machine_kind() const { return db_->kind; }

std::optional<Evaluation> Store::evaluation_here(int64_t candidate) const {
  Lock lock(db_->mu);
  if (db_->kind.empty()) return evaluation_of(candidate);
  auto st = db_->conn->prepare(
      "SELECT " + prefixed(detail::kEvaluationColumns, "e") +
      " FROM evaluations e LEFT JOIN workers w ON w.id = e.worker WHERE e.candidate = ?1 AND " +
      on_kind("w", 2, 3) + " ORDER BY e.id DESC LIMIT 1");
  backend::Query q(*st, "reading an evaluation");
  q.int64(1, candidate).text(2, db_->kind).text(3, db_->run_kind);
  if (!q.next()) return std::nullopt;
  return detail::read_evaluation(q, 0);
}

std::vector<std::pair<Candidate, Evaluation>> Store::best_on(const std::string& fingerprint,
                                                             int limit) const {
  Lock lock(db_->mu);
  std::vector<std::pair<Candidate, Evaluation>> out;
  if (limit <= 0) return out;
  if (db_->run_kind.empty()) db_->run_kind = read_run_kind(*db_);
  // Among the evaluations on this kind, each candidate's latest (a candidate the kind
  // re-timed, or confirmed, counts by its latest time there).
  auto st = db_->conn->prepare(
      "SELECT " + prefixed(detail::kCandidateColumns, "c") + ", " +
      prefixed(detail::kEvaluationColumns, "e") +
      " FROM evaluations e JOIN candidates c ON c.id = e.candidate LEFT JOIN workers w ON w.id "
      "= e.worker WHERE e.verdict = 'pass' AND e.median_seconds > 0 AND " +
      on_kind("w", 2, 3) +
      " AND e.id = (SELECT max(x.id) FROM evaluations x LEFT JOIN workers xw ON xw.id = "
      "x.worker WHERE x.candidate = e.candidate AND " +
      on_kind("xw", 2, 3) + ") ORDER BY e.median_seconds, e.id LIMIT ?1");
  backend::Query q(*st, "reading the best candidates");
  q.int64(1, limit).text(2, fingerprint).text(3, db_->run_kind);
  while (q.next()) out.emplace_back(detail::read_candidate(q, 0), detail::read_evaluation(q, 8));
  return out;
}

std::vector<std::pair<std::string, int64_t>> Store::machine_kinds() const {
  Lock lock(db_->mu);
  if (db_->run_kind.empty()) db_->run_kind = read_run_kind(*db_);
  auto st = db_->conn->prepare(
      "SELECT k, count(*) FROM (SELECT coalesce(w.fingerprint, ?1) AS k FROM evaluations e "
      "LEFT JOIN workers w ON w.id = e.worker) kinds GROUP BY k ORDER BY count(*) DESC, k");
  backend::Query q(*st, "reading the machine kinds");
  q.text(1, db_->run_kind);
  std::vector<std::pair<std::string, int64_t>> out;
  while (q.next()) out.emplace_back(q.col_text(0), q.col_int64(1));
  return out;
}

}  // namespace ollie::store
