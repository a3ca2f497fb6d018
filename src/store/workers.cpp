// The workers of a shared run and their claims (store.h, docs/distributed.md): a worker
// registers with its chains numbered after everyone else's, beats its heart while it runs,
// and claims each candidate by its source hash before evaluating it. A claim is free again
// when its worker stopped or its heartbeat is older than the lease (a killed worker), and
// a candidate with an evaluation is never claimed: no two workers evaluate one candidate.
#include <algorithm>
#include <bit>

#include "store/db.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/strings.h"

namespace ollie::store {

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

int64_t query_int(detail::Db& db, const std::string& sql, const char* what) {
  auto st = db.conn->prepare(sql);
  backend::Query q(*st, what);
  return q.next() ? q.col_int64(0) : 0;
}

// Whether the candidate has an evaluation; `here`: one timed on the store's machine kind.
bool has_evaluation(detail::Db& db, const std::string& hash, bool here) {
  if (!here || db.kind.empty()) {
    auto st = db.conn->prepare(
        "SELECT 1 FROM evaluations e JOIN candidates c ON c.id = e.candidate WHERE c.hash = ?1 "
        "LIMIT 1");
    backend::Query q(*st, "looking for an evaluation");
    q.text(1, hash);
    return q.next();
  }
  auto st = db.conn->prepare(
      "SELECT 1 FROM evaluations e JOIN candidates c ON c.id = e.candidate LEFT JOIN workers w "
      "ON w.id = e.worker WHERE c.hash = ?1 AND coalesce(w.fingerprint, ?3) = ?2 LIMIT 1");
  backend::Query q(*st, "looking for an evaluation");
  q.text(1, hash).text(2, db.kind).text(3, db.run_kind);
  return q.next();
}

}  // namespace

Worker Store::add_worker(Worker w) {
  Lock lock(db_->mu);
  if (w.chains < 1) throw InternalError("add_worker: a worker runs at least one chain");
  auto tx = transaction();
  // One registration at a time, so that two workers never get the same chains.
  if (db_->conn->dialect() == backend::Dialect::PostgreSQL)
    db_->conn->exec("LOCK TABLE workers IN SHARE ROW EXCLUSIVE MODE", "registering a worker");
  w.first_chain = static_cast<int>(std::max(
      query_int(*db_, "SELECT coalesce(max(first_chain + chains), 0) FROM workers",
                "registering a worker"),
      query_int(*db_, "SELECT coalesce(max(chain) + 1, 0) FROM steps", "registering a worker")));
  if (w.started.empty()) w.started = strings::utc_now_iso8601_ms();
  {
    auto st = db_->conn->prepare(
        std::string("INSERT INTO workers(name, fingerprint, machine_json, seed, first_chain, "
                    "chains, started, heartbeat) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ") +
        db_->now_sql() + ") RETURNING id");
    backend::Query q(*st, "registering a worker");
    q.text(1, w.name)
        .text(2, w.fingerprint)
        .text(3, w.machine_json)
        .int64(4, std::bit_cast<int64_t>(w.seed))
        .int64(5, w.first_chain)
        .int64(6, w.chains)
        .text(7, w.started);
    if (!q.next()) throw InternalError("add_worker: no id returned");
    w.id = q.col_int64(0);
  }
  tx.commit();
  db_->worker = w.id;
  set_machine_kind(w.fingerprint);
  return w;
}

std::vector<Worker> Store::workers() const {
  Lock lock(db_->mu);
  auto st = db_->conn->prepare(
      std::string("SELECT id, name, fingerprint, machine_json, seed, first_chain, chains, "
                  "started, CASE WHEN stopped IS NULL THEN 0 ELSE 1 END, ") +
      db_->now_sql() + " - heartbeat FROM workers ORDER BY id");
  backend::Query q(*st, "reading the workers");
  std::vector<Worker> out;
  while (q.next()) {
    Worker w;
    w.id = q.col_int64(0);
    w.name = q.col_text(1);
    w.fingerprint = q.col_text(2);
    w.machine_json = q.col_text(3);
    w.seed = std::bit_cast<uint64_t>(q.col_int64(4));
    w.first_chain = static_cast<int>(q.col_int64(5));
    w.chains = static_cast<int>(q.col_int64(6));
    w.started = q.col_text(7);
    w.stopped = q.col_int64(8) != 0;
    w.heartbeat_age = q.col_real(9);
    out.push_back(std::move(w));
  }
  return out;
}

void Store::heartbeat() {
  Lock lock(db_->mu);
  if (db_->worker == 0) return;
  auto st = db_->conn->prepare(std::string("UPDATE workers SET heartbeat = ") + db_->now_sql() +
                               " WHERE id = ?1");
  backend::Query(*st, "beating the worker's heart").int64(1, db_->worker).run();
}

void Store::stop_worker() {
  Lock lock(db_->mu);
  if (db_->worker == 0) return;
  auto st = db_->conn->prepare("UPDATE workers SET stopped = ?2 WHERE id = ?1");
  backend::Query(*st, "stopping the worker")
      .int64(1, db_->worker)
      .text(2, strings::utc_now_iso8601_ms())
      .run();
}

Claim Store::claim(const std::string& hash, double lease_seconds, bool here) {
  Lock lock(db_->mu);
  if (db_->worker == 0) return Claim::Ours;
  // Timing on this machine kind a candidate another kind evaluated is a claim of its own:
  // the hash and the kind.
  const std::string key = here ? hash + "@" + sha256_hex(db_->kind).substr(0, 16) : hash;
  const std::string now = db_->now_sql();
  // Taken over only from this worker itself, a worker that stopped, or one whose heart
  // stopped beating for the lease (killed). A server that restarted less than a lease ago
  // gives every worker a lease to beat again first: their hearts were silent because the
  // server was away, not because they died.
  const std::string server_up =
      db_->conn->dialect() == backend::Dialect::PostgreSQL
          ? " AND extract(epoch from pg_postmaster_start_time())::float8 < " + now + " - ?3"
          : "";
  auto st = db_->conn->prepare(
      "INSERT INTO claims(hash, worker, claimed) VALUES(?1, ?2, " + now +
      ") ON CONFLICT(hash) DO UPDATE SET worker = excluded.worker, claimed = excluded.claimed "
      "WHERE claims.worker = excluded.worker OR EXISTS (SELECT 1 FROM workers w WHERE w.id = "
      "claims.worker AND (w.stopped IS NOT NULL OR (w.heartbeat < " +
      now + " - ?3" + server_up + "))) RETURNING worker");
  bool ours = false;
  {
    backend::Query q(*st, "claiming a candidate");
    q.text(1, key).int64(2, db_->worker).real(3, lease_seconds);
    ours = q.next();
  }
  // Checked after the claim: an evaluation its last holder committed before it stopped
  // is seen here.
  if (has_evaluation(*db_, hash, here)) return Claim::Evaluated;
  return ours ? Claim::Ours : Claim::Evaluating;
}

int64_t Store::worker_id() const {
  Lock lock(db_->mu);
  return db_->worker;
}

bool Store::set_once(const std::string& key, const std::string& value) {
  Lock lock(db_->mu);
  auto st = db_->conn->prepare(
      "INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO NOTHING RETURNING key");
  backend::Query q(*st, "writing a fact of the run");
  q.text(1, key).text(2, value);
  return q.next();
}

}  // namespace ollie::store
