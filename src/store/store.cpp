#include "store/store.h"

#include <sqlite3.h>
#include <string.h>

#include <algorithm>
#include <climits>
#include <bit>
#include <cctype>
#include <mutex>

#include "store/db.h"
#include "store/schema.h"
#include "store/sqlite_backend.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/strings.h"

extern char** environ;

namespace ollie::store {

namespace {

using detail::kCandidateColumns;
using detail::kEvaluationColumns;
using detail::read_candidate;
using detail::read_evaluation;

std::string or_now(const std::string& created) {
  return created.empty() ? strings::utc_now_iso8601_ms() : created;
}

// Replaces the values of secret-looking environment variables (name containing KEY, TOKEN,
// SECRET or PASSWORD, value at least 8 characters) by "[redacted]".
std::string redact_secrets(std::string text) {
  for (char** env = environ; env && *env; ++env) {
    const char* eq = strchr(*env, '=');
    if (!eq) continue;
    std::string name(*env, static_cast<size_t>(eq - *env));
    std::string value(eq + 1);
    if (value.size() < 8) continue;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    bool secret =
        name.find("KEY") != std::string::npos || name.find("TOKEN") != std::string::npos ||
        name.find("SECRET") != std::string::npos || name.find("PASSWORD") != std::string::npos;
    if (!secret) continue;
    for (size_t pos = text.find(value); pos != std::string::npos; pos = text.find(value, pos)) {
      text.replace(pos, value.size(), "[redacted]");
      pos += 10;
    }
  }
  return text;
}

std::string cat(std::initializer_list<std::string> parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}

// PostgreSQL (schema::kPostgresCounters): `insert` (without RETURNING) as one statement that
// also adds to the counters row of the worker in parameter `worker`: `columns` by
// `values` (SQL per inserted row). Returns the inserted row's id, as `insert RETURNING id`.
std::string with_counters(const std::string& insert, int worker,
                          std::initializer_list<std::pair<const char*, const char*>> add) {
  std::string columns, values, sets;
  for (const auto& [column, value] : add) {
    columns += std::string(", ") + column;
    values += std::string(", ") + value;
    sets += cat({sets.empty() ? "" : ", ", column, " = counters.", column, " + excluded.", column});
  }
  return cat({"WITH ins AS (", insert, " RETURNING id), n AS (INSERT INTO counters(worker", columns,
              ") SELECT ?", std::to_string(worker), values,
              " FROM ins ON CONFLICT(worker) DO UPDATE SET ", sets, ") SELECT id FROM ins"});
}

}  // namespace

namespace detail {

Candidate read_candidate(const backend::Query& q, int c0) {
  Candidate c;
  c.id = q.col_int64(c0 + 0);
  c.hash = q.col_text(c0 + 1);
  c.source = q.col_text(c0 + 2);
  c.schedule = q.col_text(c0 + 3);
  c.rewrites = q.col_text(c0 + 4);
  c.parent = q.col_int64(c0 + 5);
  c.proposer = q.col_text(c0 + 6);
  c.created = q.col_text(c0 + 7);
  return c;
}

Evaluation read_evaluation(const backend::Query& q, int c0) {
  Evaluation e;
  e.id = q.col_int64(c0 + 0);
  e.candidate = q.col_int64(c0 + 1);
  e.verdict = q.col_text(c0 + 2);
  e.message = q.col_text(c0 + 3);
  e.penalty = q.col_real(c0 + 4);
  e.certificate_json = q.col_text(c0 + 5);
  e.median_seconds = q.col_real(c0 + 6);
  e.min_seconds = q.col_real(c0 + 7);
  e.mad_seconds = q.col_real(c0 + 8);
  e.ratio_vs_baseline = q.col_real(c0 + 9);
  e.rounds = static_cast<int>(q.col_int64(c0 + 10));
  e.cost = q.col_real(c0 + 11);
  e.eval_seconds = q.col_real(c0 + 12);
  e.created = q.col_text(c0 + 13);
  return e;
}

void Db::prepare() {
  // The statements built from the column lists (SQLite copies the text it prepares).
  std::string sql_candidate_by_id =
      cat({"SELECT ", kCandidateColumns, " FROM candidates WHERE id = ?1"});
  std::string sql_candidate_by_hash =
      cat({"SELECT ", kCandidateColumns, " FROM candidates WHERE hash = ?1"});
  std::string sql_evaluation_of =
      cat({"SELECT ", kEvaluationColumns,
           " FROM evaluations WHERE candidate = ?1 ORDER BY id DESC LIMIT 1"});
  std::string e_cols;
  for (std::string col : {"id", "candidate", "verdict", "message", "penalty", "certificate_json",
                          "median_seconds", "min_seconds", "mad_seconds", "ratio_vs_baseline",
                          "rounds", "cost", "eval_seconds", "created"})
    e_cols += (e_cols.empty() ? "e." : ", e.") + col;
  std::string c_cols;
  for (std::string col :
       {"id", "hash", "source", "schedule", "rewrites", "parent", "proposer", "created"})
    c_cols += (c_cols.empty() ? "c." : ", c.") + col;
  std::string sql_best =
      cat({"SELECT ", c_cols, ", ", e_cols,
           " FROM evaluations e JOIN candidates c ON c.id = e.candidate"
           " WHERE e.verdict = 'pass' AND e.median_seconds > 0"
           " AND e.id = (SELECT max(id) FROM evaluations WHERE candidate = e.candidate)"
           " ORDER BY e.median_seconds, e.id LIMIT ?1"});

  auto make = [&](const std::string& sql) { return conn->prepare(sql); };
  counters = conn->dialect() == backend::Dialect::PostgreSQL;
  // Each insert, and on PostgreSQL its counters in the same statement (the worker: the
  // parameter after the row's).
  auto counted = [&](const std::string& insert, int worker_param,
                     std::initializer_list<std::pair<const char*, const char*>> add) {
    return make(counters ? with_counters(insert, worker_param, add) : insert + " RETURNING id");
  };
  run = make(
      "SELECT spec_path, spec_source, spec_sha256, entry, dims_json, machine_json, "
      "options_json, seed, created FROM run WHERE id = 1");
  insert_candidate = counted(
      "INSERT INTO candidates(hash, source, schedule, rewrites, parent, proposer, created, "
      "predicted) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(hash) DO NOTHING",
      9, {{"candidates", "1"}});
  candidate_id_by_hash = make("SELECT id FROM candidates WHERE hash = ?1");
  candidate_by_id = make(sql_candidate_by_id);
  candidate_by_hash = make(sql_candidate_by_hash);
  // A pass counts when the candidate had none (the statement reads the rows before it).
  insert_evaluation = counted(
      "INSERT INTO evaluations(candidate, verdict, message, penalty, certificate_json, "
      "median_seconds, min_seconds, mad_seconds, ratio_vs_baseline, rounds, cost, "
      "eval_seconds, created, worker) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
      "?13, ?14)",
      15,
      {{"evaluations", "1"},
       {"passes",
        "CASE WHEN ?2 = 'pass' AND NOT EXISTS (SELECT 1 FROM evaluations WHERE candidate = ?1 "
        "AND verdict = 'pass') THEN 1 ELSE 0 END"}});
  evaluation_of = make(sql_evaluation_of);
  insert_step = counted(
      "INSERT INTO steps(step, chain, proposed, \"current\", accepted, temperature, "
      "cost_current, cost_proposed, note, created) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
      11, {{"steps", "1"}, {"accepted_steps", "?5"}});
  last_step = make(
      "SELECT step, chain, proposed, \"current\", accepted, temperature, cost_current, "
      "cost_proposed, note FROM steps WHERE chain = ?1 ORDER BY step DESC LIMIT 1");
  next_step = make("SELECT coalesce(max(step) + 1, 0) FROM steps");
  insert_event =
      counted("INSERT INTO events(kind, text, created) VALUES(?1, ?2, ?3)", 4, {{"events", "1"}});
  insert_model_call = counted(
      "INSERT INTO model_calls(proposer, request, answer, status, http_status, tokens_in, "
      "tokens_out, cost, seconds, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
      11, {{"model_calls", "1"}});
  model_calls = make(
      "SELECT id, proposer, request, answer, status, http_status, tokens_in, tokens_out, "
      "cost, seconds, created FROM model_calls WHERE proposer = ?1 AND id > ?2 "
      "ORDER BY id LIMIT ?3");
  best = make(sql_best);
  counts = make(
      counters
          ? "SELECT coalesce(sum(candidates), 0), coalesce(sum(evaluations), 0), "
            "coalesce(sum(steps), 0), coalesce(sum(accepted_steps), 0), coalesce(sum(passes), 0), "
            "coalesce(sum(events), 0), coalesce(sum(model_calls), 0) FROM counters"
          : "SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM evaluations), "
            "(SELECT count(*) FROM steps), (SELECT count(*) FROM steps WHERE accepted = 1), "
            "(SELECT count(DISTINCT candidate) FROM evaluations WHERE verdict = 'pass'), "
            "(SELECT count(*) FROM events), (SELECT count(*) FROM model_calls)");
  predictions = make(
      "SELECT c.predicted, e.ratio_vs_baseline FROM candidates c JOIN evaluations e ON "
      "e.candidate = c.id WHERE c.predicted IS NOT NULL AND e.id = (SELECT max(id) FROM "
      "evaluations WHERE candidate = c.id) AND e.verdict = 'pass' AND e.ratio_vs_baseline > 0 "
      "ORDER BY c.id");
  has_pass = make("SELECT 1 FROM evaluations WHERE candidate = ?1 AND verdict = 'pass' LIMIT 1");
}

}  // namespace detail

using Lock = std::lock_guard<std::recursive_mutex>;

// ---- Transaction ----

Transaction::Transaction(detail::Db* db) : db_(db) {
  db_->mu.lock();
  try {
    if (db_->in_transaction)
      throw InternalError("run database '" + db_->conn->name() + "': transactions do not nest");
    db_->conn->begin("starting a transaction");
    db_->in_transaction = true;
  } catch (...) {
    db_->mu.unlock();
    throw;
  }
}

void Transaction::commit() {
  if (done_) throw InternalError("Transaction::commit called twice");
  done_ = true;
  db_->in_transaction = false;
  try {
    db_->conn->commit("committing");
  } catch (...) {
    // A failed COMMIT (a full disk) may leave the transaction open: end it here.
    db_->counts_cache.reset();
    db_->conn->rollback();
    db_->mu.unlock();
    throw;
  }
  db_->mu.unlock();
}

Transaction::~Transaction() {
  if (done_) return;
  db_->in_transaction = false;
  db_->counts_cache.reset();
  db_->conn->rollback();
  db_->mu.unlock();
}

// ---- Store ----

Store::Store(std::unique_ptr<detail::Db> db) : db_(std::move(db)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return db_->conn->name(); }
bool Store::shared() const { return db_->conn->shared(); }
int Store::schema_version() { return static_cast<int>(schema::kSchemaVersion); }

// ---- Store: rows ----

RunInfo Store::run() const {
  Lock lock(db_->mu);
  backend::Query q(*db_->run, "reading the run");
  if (!q.next()) throw InternalError("run database '" + path() + "' has no run row");
  RunInfo r;
  r.spec_path = q.col_text(0);
  r.spec_source = q.col_text(1);
  r.spec_sha256 = q.col_text(2);
  r.entry = q.col_text(3);
  r.dims_json = q.col_text(4);
  r.machine_json = q.col_text(5);
  r.options_json = q.col_text(6);
  r.seed = std::bit_cast<uint64_t>(q.col_int64(7));
  r.created = q.col_text(8);
  return r;
}

int64_t Store::add_candidate(Candidate c) {
  std::string hash = sha256_hex(c.source);
  if (!c.hash.empty() && c.hash != hash)
    throw InternalError("add_candidate: the hash given is not the SHA-256 of the source");
  Lock lock(db_->mu);
  {
    backend::Query q(*db_->insert_candidate, "adding a candidate");
    q.text(1, hash)
        .text(2, c.source)
        .text(3, c.schedule)
        .text(4, c.rewrites)
        .id_or_null(5, c.parent)
        .text(6, c.proposer)
        .text(7, or_now(c.created));
    if (c.predicted)
      q.real(8, *c.predicted);
    else
      q.null(8);
    if (db_->counters) q.int64(9, db_->worker);
    if (q.next()) {  // RETURNING: a row when it was added, none when it was there
      if (db_->counts_cache) ++db_->counts_cache->candidates;
      return q.col_int64(0);
    }
  }
  backend::Query q(*db_->candidate_id_by_hash, "looking up a candidate");
  q.text(1, hash);
  if (!q.next()) throw InternalError("add_candidate: the candidate was neither added nor found");
  return q.col_int64(0);
}

std::optional<Candidate> Store::candidate(int64_t id) const {
  Lock lock(db_->mu);
  backend::Query q(*db_->candidate_by_id, "reading a candidate");
  q.int64(1, id);
  if (!q.next()) return std::nullopt;
  return read_candidate(q, 0);
}

std::optional<Candidate> Store::candidate_by_hash(const std::string& hash) const {
  Lock lock(db_->mu);
  backend::Query q(*db_->candidate_by_hash, "reading a candidate");
  q.text(1, hash);
  if (!q.next()) return std::nullopt;
  return read_candidate(q, 0);
}

int64_t Store::add_evaluation(const Evaluation& e) {
  Lock lock(db_->mu);
  bool first_pass = false;
  if (db_->counts_cache && e.verdict == "pass") {
    backend::Query check(*db_->has_pass, "reading a candidate's evaluations");
    check.int64(1, e.candidate);
    first_pass = !check.next();
  }
  backend::Query q(*db_->insert_evaluation, "adding an evaluation");
  q.int64(1, e.candidate)
      .text(2, e.verdict)
      .text(3, e.message)
      .real(4, e.penalty)
      .text(5, e.certificate_json)
      .real(6, e.median_seconds)
      .real(7, e.min_seconds)
      .real(8, e.mad_seconds)
      .real(9, e.ratio_vs_baseline)
      .int64(10, e.rounds)
      .real(11, e.cost)
      .real(12, e.eval_seconds)
      .text(13, or_now(e.created))
      .id_or_null(14, db_->worker);
  if (db_->counters) q.int64(15, db_->worker);
  if (!q.next()) throw InternalError("add_evaluation: no id returned");
  if (db_->counts_cache) {
    ++db_->counts_cache->evaluations;
    if (first_pass) ++db_->counts_cache->passes;
  }
  return q.col_int64(0);
}

std::optional<Evaluation> Store::evaluation_of(int64_t candidate) const {
  Lock lock(db_->mu);
  backend::Query q(*db_->evaluation_of, "reading an evaluation");
  q.int64(1, candidate);
  if (!q.next()) return std::nullopt;
  return read_evaluation(q, 0);
}

void Store::add_step(const Step& s) {
  Lock lock(db_->mu);
  backend::Query q(*db_->insert_step, "adding a step");
  q.int64(1, s.step)
      .int64(2, s.chain)
      .id_or_null(3, s.proposed)
      .id_or_null(4, s.current)
      .int64(5, s.accepted ? 1 : 0)
      .real(6, s.temperature)
      .real(7, s.cost_current)
      .real(8, s.cost_proposed)
      .text(9, s.note)
      .text(10, strings::utc_now_iso8601_ms());
  if (db_->counters) q.int64(11, db_->worker);
  q.run();
  if (db_->counts_cache) {
    ++db_->counts_cache->steps;
    if (s.accepted) ++db_->counts_cache->accepted_steps;
  }
}

std::optional<Step> Store::last_step(int chain) const {
  Lock lock(db_->mu);
  backend::Query q(*db_->last_step, "reading a step");
  q.int64(1, chain);
  if (!q.next()) return std::nullopt;
  Step s;
  s.step = q.col_int64(0);
  s.chain = static_cast<int>(q.col_int64(1));
  s.proposed = q.col_int64(2);
  s.current = q.col_int64(3);
  s.accepted = q.col_int64(4) != 0;
  s.temperature = q.col_real(5);
  s.cost_current = q.col_real(6);
  s.cost_proposed = q.col_real(7);
  s.note = q.col_text(8);
  return s;
}

int64_t Store::next_step() const {
  Lock lock(db_->mu);
  backend::Query q(*db_->next_step, "reading the steps");
  return q.next() ? q.col_int64(0) : 0;
}

void Store::add_event(const std::string& kind, const std::string& text) {
  Lock lock(db_->mu);
  backend::Query q(*db_->insert_event, "adding an event");
  q.text(1, kind).text(2, text).text(3, strings::utc_now_iso8601_ms());
  if (db_->counters) q.int64(4, db_->worker);
  q.run();
  if (db_->counts_cache) ++db_->counts_cache->events;
}

int64_t Store::add_model_call(const ModelCall& m) {
  std::string request = redact_secrets(m.request);
  std::string answer = redact_secrets(m.answer);
  Lock lock(db_->mu);
  backend::Query q(*db_->insert_model_call, "adding a model call");
  q.text(1, m.proposer)
      .text(2, request)
      .text(3, answer)
      .text(4, m.status)
      .int64(5, m.http_status)
      .int64(6, m.tokens_in)
      .int64(7, m.tokens_out)
      .real(8, m.cost)
      .real(9, m.seconds)
      .text(10, or_now(m.created));
  if (db_->counters) q.int64(11, db_->worker);
  if (!q.next()) throw InternalError("add_model_call: no id returned");
  if (db_->counts_cache) ++db_->counts_cache->model_calls;
  return q.col_int64(0);
}

std::vector<ModelCall> Store::model_calls(const std::string& proposer, int64_t after_id,
                                          int64_t limit) const {
  Lock lock(db_->mu);
  backend::Query q(*db_->model_calls, "reading model calls");
  q.text(1, proposer).int64(2, after_id).int64(3, limit < 0 ? INT64_MAX : limit);
  std::vector<ModelCall> out;
  while (q.next()) {
    ModelCall m;
    m.id = q.col_int64(0);
    m.proposer = q.col_text(1);
    m.request = q.col_text(2);
    m.answer = q.col_text(3);
    m.status = q.col_text(4);
    m.http_status = static_cast<int>(q.col_int64(5));
    m.tokens_in = q.col_int64(6);
    m.tokens_out = q.col_int64(7);
    m.cost = q.col_real(8);
    m.seconds = q.col_real(9);
    m.created = q.col_text(10);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::pair<Candidate, Evaluation>> Store::best(int limit) const {
  Lock lock(db_->mu);
  if (!db_->kind.empty()) return best_on(db_->kind, limit);
  std::vector<std::pair<Candidate, Evaluation>> out;
  if (limit <= 0) return out;
  backend::Query q(*db_->best, "reading the best candidates");
  q.int64(1, limit);
  while (q.next()) out.emplace_back(read_candidate(q, 0), read_evaluation(q, 8));
  return out;
}

std::vector<std::pair<double, double>> Store::predictions() const {
  Lock lock(db_->mu);
  backend::Query q(*db_->predictions, "reading the cost model's predictions");
  std::vector<std::pair<double, double>> out;
  while (q.next()) out.emplace_back(q.col_real(0), q.col_real(1));
  return out;
}

Counts Store::counts() const {
  Lock lock(db_->mu);
  if (db_->counts_cache) return *db_->counts_cache;
  backend::Query q(*db_->counts, "counting rows");
  Counts c;
  if (q.next()) {
    c.candidates = q.col_int64(0);
    c.evaluations = q.col_int64(1);
    c.steps = q.col_int64(2);
    c.accepted_steps = q.col_int64(3);
    c.passes = q.col_int64(4);
    c.events = q.col_int64(5);
    c.model_calls = q.col_int64(6);
  }
  if (!db_->conn->shared()) db_->counts_cache = c;
  return c;
}

Transaction Store::transaction() { return Transaction(db_.get()); }

void Store::checkpoint() {
  Lock lock(db_->mu);
  if (db_->in_transaction)
    throw InternalError("run database '" + path() + "': checkpoint inside a transaction");
  auto* sqlite = dynamic_cast<backend::SqliteBackend*>(db_->conn.get());
  if (!sqlite) return;  // a server's database has no log of ours to move
  sql::Connection& conn = sqlite->connection();
  int rc =
      sqlite3_wal_checkpoint_v2(conn.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  // BUSY: another process (a live report) is reading; what could be copied was, and the
  // rest is copied by a later checkpoint or when the last connection closes.
  if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY) conn.fail(rc, "checkpointing");
}

std::string Store::integrity_check() const {
  Lock lock(db_->mu);
  // PostgreSQL checks every constraint as rows are written.
  if (db_->conn->dialect() != backend::Dialect::SQLite) return "ok";
  std::string out;
  {
    auto st = db_->conn->prepare("PRAGMA integrity_check");
    backend::Query q(*st, "checking integrity");
    while (q.next()) {
      std::string line = q.col_text(0);
      if (line != "ok") out += line + "\n";
    }
  }
  {
    auto st = db_->conn->prepare("PRAGMA foreign_key_check");
    backend::Query q(*st, "checking foreign keys");
    while (q.next())
      out += "foreign key: table " + q.col_text(0) + " row " + std::to_string(q.col_int64(1)) +
             " names a missing row of " + q.col_text(2) + "\n";
  }
  if (out.empty()) return "ok";
  out.pop_back();
  return out;
}

}  // namespace ollie::store
