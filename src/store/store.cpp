#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "store/sqlite.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/strings.h"

extern char** environ;

namespace ollie::store {

namespace {

// PRAGMA application_id of every run database: "olli". A file without it is not ours.
constexpr int64_t kApplicationId = 0x6F6C6C69;
// PRAGMA user_version: the schema this ollie writes. Raise it (and add a migration in
// Store::open) when a table changes.
constexpr int64_t kSchemaVersion = 2;

// What turns a file of version `to - 1` into version `to`, in order (Store::open runs the
// ones above the file's version in one transaction). Columns are only ever added at the
// end of a table, nullable or with a default, so rows written before stay valid.
struct Migration {
  int64_t to;
  const char* sql;
};
constexpr Migration kMigrations[] = {
    // 2: the cost model's prediction of each candidate (docs/search.md, "The cost model").
    {2, "ALTER TABLE candidates ADD COLUMN predicted REAL DEFAULT NULL"},
};

// The whole schema. Every value a row needs is NOT NULL except the ids that mean "none"
// (a candidate's parent, a step's candidates), which are NULL rather than 0 so that the
// foreign keys hold.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS run(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  spec_path TEXT NOT NULL,
  spec_source TEXT NOT NULL,
  spec_sha256 TEXT NOT NULL,
  entry TEXT NOT NULL,
  dims_json TEXT NOT NULL,
  machine_json TEXT NOT NULL,
  options_json TEXT NOT NULL,
  seed INTEGER NOT NULL,            -- the uint64 seed's bits as a signed 64-bit integer
  created TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS candidates(
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL,               -- hex SHA-256 of source
  source TEXT NOT NULL,
  schedule TEXT NOT NULL,
  rewrites TEXT NOT NULL,
  parent INTEGER REFERENCES candidates(id),
  proposer TEXT NOT NULL,
  created TEXT NOT NULL,
  predicted REAL DEFAULT NULL);     -- the cost model's log(time / baseline time); NULL: none
CREATE UNIQUE INDEX IF NOT EXISTS candidates_hash ON candidates(hash);

CREATE TABLE IF NOT EXISTS evaluations(
  id INTEGER PRIMARY KEY,
  candidate INTEGER NOT NULL REFERENCES candidates(id),
  verdict TEXT NOT NULL,
  message TEXT NOT NULL,
  penalty REAL NOT NULL,
  certificate_json TEXT NOT NULL,
  median_seconds REAL NOT NULL,
  min_seconds REAL NOT NULL,
  mad_seconds REAL NOT NULL,
  ratio_vs_baseline REAL NOT NULL,
  rounds INTEGER NOT NULL,
  cost REAL NOT NULL,
  eval_seconds REAL NOT NULL,
  created TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS evaluations_candidate ON evaluations(candidate, id);
CREATE INDEX IF NOT EXISTS evaluations_pass ON evaluations(median_seconds, id)
  WHERE verdict = 'pass' AND median_seconds > 0;

CREATE TABLE IF NOT EXISTS steps(
  id INTEGER PRIMARY KEY,
  step INTEGER NOT NULL,
  chain INTEGER NOT NULL,
  proposed INTEGER REFERENCES candidates(id),
  "current" INTEGER REFERENCES candidates(id),
  accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
  temperature REAL NOT NULL,
  cost_current REAL NOT NULL,
  cost_proposed REAL NOT NULL,
  note TEXT NOT NULL,
  created TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS steps_chain_step ON steps(chain, step);
CREATE INDEX IF NOT EXISTS steps_step ON steps(step);

CREATE TABLE IF NOT EXISTS events(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  created TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS model_calls(
  id INTEGER PRIMARY KEY,
  proposer TEXT NOT NULL,
  request TEXT NOT NULL,
  answer TEXT NOT NULL,
  status TEXT NOT NULL,
  http_status INTEGER NOT NULL,
  tokens_in INTEGER NOT NULL,
  tokens_out INTEGER NOT NULL,
  cost REAL NOT NULL,
  seconds REAL NOT NULL,
  created TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS model_calls_proposer ON model_calls(proposer, id);
)sql";

// Per connection: WAL is recorded in the file, the others are not.
constexpr const char* kConnectionPragmas = "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;";
constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kCandidateColumns =
    "id, hash, source, schedule, rewrites, parent, proposer, created";
constexpr const char* kEvaluationColumns =
    "id, candidate, verdict, message, penalty, certificate_json, median_seconds, min_seconds, "
    "mad_seconds, ratio_vs_baseline, rounds, cost, eval_seconds, created";

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

Candidate read_candidate(const sql::Query& q, int c0) {
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

Evaluation read_evaluation(const sql::Query& q, int c0) {
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

std::string cat(std::initializer_list<std::string> parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}

}  // namespace

namespace detail {

// The connection and every statement the store runs, each prepared once.
class Db {
 public:
  explicit Db(const std::string& path, int flags) : conn(path, flags) {}

  void prepare() {
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

    auto make = [&](const char* sql) { return std::make_unique<sql::Statement>(conn, sql); };
    run = make(
        "SELECT spec_path, spec_source, spec_sha256, entry, dims_json, machine_json, "
        "options_json, seed, created FROM run WHERE id = 1");
    insert_candidate = make(
        "INSERT INTO candidates(hash, source, schedule, rewrites, parent, proposer, created, "
        "predicted) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(hash) DO NOTHING");
    candidate_id_by_hash = make("SELECT id FROM candidates WHERE hash = ?1");
    candidate_by_id = make(sql_candidate_by_id.c_str());
    candidate_by_hash = make(sql_candidate_by_hash.c_str());
    insert_evaluation = make(
        "INSERT INTO evaluations(candidate, verdict, message, penalty, certificate_json, "
        "median_seconds, min_seconds, mad_seconds, ratio_vs_baseline, rounds, cost, "
        "eval_seconds, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    evaluation_of = make(sql_evaluation_of.c_str());
    insert_step = make(
        "INSERT INTO steps(step, chain, proposed, \"current\", accepted, temperature, "
        "cost_current, cost_proposed, note, created) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    last_step = make(
        "SELECT step, chain, proposed, \"current\", accepted, temperature, cost_current, "
        "cost_proposed, note FROM steps WHERE chain = ?1 ORDER BY step DESC LIMIT 1");
    next_step = make("SELECT coalesce(max(step) + 1, 0) FROM steps");
    insert_event = make("INSERT INTO events(kind, text, created) VALUES(?1, ?2, ?3)");
    insert_model_call = make(
        "INSERT INTO model_calls(proposer, request, answer, status, http_status, tokens_in, "
        "tokens_out, cost, seconds, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    model_calls = make(
        "SELECT id, proposer, request, answer, status, http_status, tokens_in, tokens_out, "
        "cost, seconds, created FROM model_calls WHERE proposer = ?1 AND id > ?2 "
        "ORDER BY id LIMIT ?3");
    best = make(sql_best.c_str());
    counts = make(
        "SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM evaluations), "
        "(SELECT count(*) FROM steps), (SELECT count(*) FROM steps WHERE accepted = 1), "
        "(SELECT count(DISTINCT candidate) FROM evaluations WHERE verdict = 'pass'), "
        "(SELECT count(*) FROM events), (SELECT count(*) FROM model_calls)");
    predictions = make(
        "SELECT c.predicted, e.ratio_vs_baseline FROM candidates c JOIN evaluations e ON "
        "e.candidate = c.id WHERE c.predicted IS NOT NULL AND e.id = (SELECT max(id) FROM "
        "evaluations WHERE candidate = c.id) AND e.verdict = 'pass' AND e.ratio_vs_baseline > 0 "
        "ORDER BY c.id");
    has_pass = make("SELECT 1 FROM evaluations WHERE candidate = ?1 AND verdict = 'pass' LIMIT 1");
    begin = make("BEGIN IMMEDIATE");
    commit = make("COMMIT");
    rollback = make("ROLLBACK");
  }

  // Declared first: destroyed after the statements below.
  sql::Connection conn;
  std::recursive_mutex mu;
  bool in_transaction = false;
  // The row counts, read once and then kept up to date by every add_*: counting with SQL
  // scans whole tables (the passes count reads every evaluation row, certificates and
  // all), which a long run would pay on every step. Sound because one process owns a run
  // (optimize's lock). Dropped on a rollback, and read again when next asked for.
  std::optional<Counts> counts_cache;

  std::unique_ptr<sql::Statement> run, insert_candidate, candidate_id_by_hash, candidate_by_id,
      candidate_by_hash, insert_evaluation, evaluation_of, insert_step, last_step, next_step,
      insert_event, insert_model_call, model_calls, best, counts, has_pass, begin, commit, rollback,
      predictions;
};

}  // namespace detail

using Lock = std::lock_guard<std::recursive_mutex>;

// ---- Transaction ----

Transaction::Transaction(detail::Db* db) : db_(db) {
  db_->mu.lock();
  try {
    if (db_->in_transaction)
      throw InternalError("run database '" + db_->conn.path() + "': transactions do not nest");
    sql::Query(*db_->begin, "starting a transaction").run();
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
    sql::Query(*db_->commit, "committing").run();
  } catch (...) {
    // A failed COMMIT (a full disk) may leave the transaction open: end it here.
    db_->counts_cache.reset();
    if (!sqlite3_get_autocommit(db_->conn.get())) {
      try {
        sql::Query(*db_->rollback, "rolling back").run();
      } catch (...) {
      }
    }
    db_->mu.unlock();
    throw;
  }
  db_->mu.unlock();
}

Transaction::~Transaction() {
  if (done_) return;
  db_->in_transaction = false;
  db_->counts_cache.reset();
  if (!sqlite3_get_autocommit(db_->conn.get())) {
    try {
      sql::Query(*db_->rollback, "rolling back").run();
    } catch (...) {
      // Nothing more to do: SQLite rolls an unfinished transaction back when the file is
      // next opened.
    }
  }
  db_->mu.unlock();
}

// ---- Store: opening ----

Store::Store(std::unique_ptr<detail::Db> db) : db_(std::move(db)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return db_->conn.path(); }
int Store::schema_version() { return static_cast<int>(kSchemaVersion); }

Store Store::create(const std::string& path, const RunInfo& info) {
  // Exclusive creation: two runs never share a file, and an existing run is never touched.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    if (err == EEXIST)
      throw UserError("run database '" + path + "' exists; resume it with --resume " + path +
                      " or choose another -o");
    throw UserError("cannot create run database '" + path + "': " + strerror(err) +
                    "; check that the directory exists and is writable");
  }
  ::close(fd);
  auto remove_files = [&] {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(path + suffix, ec);
  };
  try {
    auto db = std::make_unique<detail::Db>(path, SQLITE_OPEN_READWRITE);
    sqlite3_busy_timeout(db->conn.get(), kBusyTimeoutMs);
    if (db->conn.query_text("PRAGMA journal_mode = WAL", "switching to WAL") != "wal")
      throw UserError("run database '" + path +
                      "': SQLite cannot use a write-ahead log there (is it on a network file "
                      "system?); choose a local directory with -o");
    db->conn.exec(kConnectionPragmas, "setting up the connection");
    db->conn.exec("BEGIN IMMEDIATE", "creating the schema");
    db->conn.exec(kSchema, "creating the schema");
    // The numbers are constants of this file, not values from outside.
    db->conn.exec(("PRAGMA application_id = " + std::to_string(kApplicationId) +
                   "; PRAGMA user_version = " + std::to_string(kSchemaVersion))
                      .c_str(),
                  "writing the schema version");
    {
      sql::Statement meta(db->conn, "INSERT INTO meta(key, value) VALUES(?1, ?2)");
      sql::Query(meta, "writing meta").text(1, "format").text(2, "ollie run database").run();
      sql::Query(meta, "writing meta")
          .text(1, "schema_version")
          .text(2, std::to_string(kSchemaVersion))
          .run();
      sql::Statement run(db->conn,
                         "INSERT INTO run(id, spec_path, spec_source, spec_sha256, entry, "
                         "dims_json, machine_json, options_json, seed, created) "
                         "VALUES(1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
      sql::Query(run, "writing the run")
          .text(1, info.spec_path)
          .text(2, info.spec_source)
          .text(3, info.spec_sha256)
          .text(4, info.entry)
          .text(5, info.dims_json)
          .text(6, info.machine_json)
          .text(7, info.options_json)
          .int64(8, std::bit_cast<int64_t>(info.seed))
          .text(9, or_now(info.created))
          .run();
    }
    db->conn.exec("COMMIT", "creating the run database");
    // The file's name in its directory survives a power cut too (SQLite syncs the
    // directory for the log it creates, not for a database file made by someone else).
    std::string dir = std::filesystem::path(path).parent_path().string();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    db->prepare();
    return Store(std::move(db));
  } catch (...) {
    remove_files();
    throw;
  }
}

namespace {

// Brings a file of schema `version` up to kSchemaVersion (kMigrations), in one transaction.
void migrate(sql::Connection& conn, int64_t version) {
  if (version >= kSchemaVersion) return;
  conn.exec("BEGIN IMMEDIATE", "migrating the schema");
  try {
    for (const Migration& m : kMigrations)
      if (m.to > version) conn.exec(m.sql, "migrating the schema");
    // The numbers are constants of this file, not values from outside.
    const std::string v = std::to_string(kSchemaVersion);
    conn.exec(("PRAGMA user_version = " + v + "; UPDATE meta SET value = '" + v +
               "' WHERE key = 'schema_version'")
                  .c_str(),
              "migrating the schema");
    conn.exec("COMMIT", "migrating the schema");
  } catch (...) {
    conn.exec("ROLLBACK", "rolling back the migration");
    throw;
  }
}

}  // namespace

Store Store::open(const std::string& path) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw UserError("run database '" + path +
                    "' not found; give the file that `ollie optimize -o` wrote");
  if (!std::filesystem::is_regular_file(status))
    throw UserError("run database '" + path + "' is not a file; give the .db file of a run");
  std::string not_ours = "'" + path + "' is not an ollie run database";
  if (std::filesystem::file_size(path, ec) == 0 && !ec)
    throw UserError(not_ours +
                    " (it is empty: a run killed while its database was being created leaves "
                    "such a file; delete it and start the run again)");

  {
    // Every SQLite database file starts with these 16 bytes.
    char header[16] = {};
    std::ifstream in(path, std::ios::binary);
    in.read(header, sizeof header);
    if (!in || std::string(header, sizeof header) != std::string("SQLite format 3\0", 16))
      throw UserError(not_ours + " (it is not an SQLite database file)");
  }

  auto db = std::make_unique<detail::Db>(path, SQLITE_OPEN_READWRITE);
  sqlite3_busy_timeout(db->conn.get(), kBusyTimeoutMs);
  if (sqlite3_db_readonly(db->conn.get(), "main") == 1)
    throw UserError("run database '" + path +
                    "' is read-only; ollie writes to it while it runs: make it writable");
  int64_t app_id = db->conn.query_int("PRAGMA application_id", "reading the header");
  int64_t version = db->conn.query_int("PRAGMA user_version", "reading the header");
  if (app_id != kApplicationId)
    throw UserError(not_ours + " (it is an SQLite database written by something else)");
  if (version > kSchemaVersion)
    throw UserError("run database '" + path + "' was written by a newer ollie (schema version " +
                    std::to_string(version) + "; this ollie reads up to " +
                    std::to_string(kSchemaVersion) + "); open it with that ollie or a newer one");
  if (version < 1) throw UserError(not_ours + " (it has no schema version; the file is damaged)");
  migrate(db->conn, version);
  if (db->conn.query_text("PRAGMA journal_mode = WAL", "switching to WAL") != "wal")
    throw UserError("run database '" + path +
                    "': SQLite cannot use a write-ahead log there (is it on a network file "
                    "system?); copy it to a local directory");
  db->conn.exec(kConnectionPragmas, "setting up the connection");
  if (db->conn.query_int("SELECT count(*) FROM run", "reading the run") != 1)
    throw UserError(not_ours + " (it has no run record; the file is damaged)");
  db->prepare();
  return Store(std::move(db));
}

// ---- Store: rows ----

RunInfo Store::run() const {
  Lock lock(db_->mu);
  sql::Query q(*db_->run, "reading the run");
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
    sql::Query q(*db_->insert_candidate, "adding a candidate");
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
    q.run();
    if (sqlite3_changes(db_->conn.get()) == 1) {
      if (db_->counts_cache) ++db_->counts_cache->candidates;
      return sqlite3_last_insert_rowid(db_->conn.get());
    }
  }
  sql::Query q(*db_->candidate_id_by_hash, "looking up a candidate");
  q.text(1, hash);
  if (!q.next()) throw InternalError("add_candidate: the candidate was neither added nor found");
  return q.col_int64(0);
}

std::optional<Candidate> Store::candidate(int64_t id) const {
  Lock lock(db_->mu);
  sql::Query q(*db_->candidate_by_id, "reading a candidate");
  q.int64(1, id);
  if (!q.next()) return std::nullopt;
  return read_candidate(q, 0);
}

std::optional<Candidate> Store::candidate_by_hash(const std::string& hash) const {
  Lock lock(db_->mu);
  sql::Query q(*db_->candidate_by_hash, "reading a candidate");
  q.text(1, hash);
  if (!q.next()) return std::nullopt;
  return read_candidate(q, 0);
}

int64_t Store::add_evaluation(const Evaluation& e) {
  Lock lock(db_->mu);
  bool first_pass = false;
  if (db_->counts_cache && e.verdict == "pass") {
    sql::Query check(*db_->has_pass, "reading a candidate's evaluations");
    check.int64(1, e.candidate);
    first_pass = !check.next();
  }
  sql::Query q(*db_->insert_evaluation, "adding an evaluation");
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
      .run();
  if (db_->counts_cache) {
    ++db_->counts_cache->evaluations;
    if (first_pass) ++db_->counts_cache->passes;
  }
  return sqlite3_last_insert_rowid(db_->conn.get());
}

std::optional<Evaluation> Store::evaluation_of(int64_t candidate) const {
  Lock lock(db_->mu);
  sql::Query q(*db_->evaluation_of, "reading an evaluation");
  q.int64(1, candidate);
  if (!q.next()) return std::nullopt;
  return read_evaluation(q, 0);
}

void Store::add_step(const Step& s) {
  Lock lock(db_->mu);
  sql::Query q(*db_->insert_step, "adding a step");
  q.int64(1, s.step)
      .int64(2, s.chain)
      .id_or_null(3, s.proposed)
      .id_or_null(4, s.current)
      .int64(5, s.accepted ? 1 : 0)
      .real(6, s.temperature)
      .real(7, s.cost_current)
      .real(8, s.cost_proposed)
      .text(9, s.note)
      .text(10, strings::utc_now_iso8601_ms())
      .run();
  if (db_->counts_cache) {
    ++db_->counts_cache->steps;
    if (s.accepted) ++db_->counts_cache->accepted_steps;
  }
}

std::optional<Step> Store::last_step(int chain) const {
  Lock lock(db_->mu);
  sql::Query q(*db_->last_step, "reading a step");
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
  sql::Query q(*db_->next_step, "reading the steps");
  return q.next() ? q.col_int64(0) : 0;
}

void Store::add_event(const std::string& kind, const std::string& text) {
  Lock lock(db_->mu);
  sql::Query(*db_->insert_event, "adding an event")
      .text(1, kind)
      .text(2, text)
      .text(3, strings::utc_now_iso8601_ms())
      .run();
  if (db_->counts_cache) ++db_->counts_cache->events;
}

int64_t Store::add_model_call(const ModelCall& m) {
  std::string request = redact_secrets(m.request);
  std::string answer = redact_secrets(m.answer);
  Lock lock(db_->mu);
  sql::Query(*db_->insert_model_call, "adding a model call")
      .text(1, m.proposer)
      .text(2, request)
      .text(3, answer)
      .text(4, m.status)
      .int64(5, m.http_status)
      .int64(6, m.tokens_in)
      .int64(7, m.tokens_out)
      .real(8, m.cost)
      .real(9, m.seconds)
      .text(10, or_now(m.created))
      .run();
  if (db_->counts_cache) ++db_->counts_cache->model_calls;
  return sqlite3_last_insert_rowid(db_->conn.get());
}

std::vector<ModelCall> Store::model_calls(const std::string& proposer, int64_t after_id,
                                          int64_t limit) const {
  Lock lock(db_->mu);
  sql::Query q(*db_->model_calls, "reading model calls");
  q.text(1, proposer).int64(2, after_id).int64(3, limit < 0 ? -1 : limit);
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
  std::vector<std::pair<Candidate, Evaluation>> out;
  if (limit <= 0) return out;
  sql::Query q(*db_->best, "reading the best candidates");
  q.int64(1, limit);
  while (q.next()) out.emplace_back(read_candidate(q, 0), read_evaluation(q, 8));
  return out;
}

std::vector<std::pair<double, double>> Store::predictions() const {
  Lock lock(db_->mu);
  sql::Query q(*db_->predictions, "reading the cost model's predictions");
  std::vector<std::pair<double, double>> out;
  while (q.next()) out.emplace_back(q.col_real(0), q.col_real(1));
  return out;
}

Counts Store::counts() const {
  Lock lock(db_->mu);
  if (db_->counts_cache) return *db_->counts_cache;
  sql::Query q(*db_->counts, "counting rows");
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
  db_->counts_cache = c;
  return c;
}

Transaction Store::transaction() { return Transaction(db_.get()); }

void Store::checkpoint() {
  Lock lock(db_->mu);
  if (db_->in_transaction)
    throw InternalError("run database '" + path() + "': checkpoint inside a transaction");
  int rc = sqlite3_wal_checkpoint_v2(db_->conn.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr,
                                     nullptr);
  // BUSY: another process (a live report) is reading; what could be copied was, and the
  // rest is copied by a later checkpoint or when the last connection closes.
  if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY) db_->conn.fail(rc, "checkpointing");
}

std::string Store::integrity_check() const {
  Lock lock(db_->mu);
  std::string out;
  {
    sql::Statement st(db_->conn, "PRAGMA integrity_check");
    sql::Query q(st, "checking integrity");
    while (q.next()) {
      std::string line = q.col_text(0);
      if (line != "ok") out += line + "\n";
    }
  }
  {
    sql::Statement st(db_->conn, "PRAGMA foreign_key_check");
    sql::Query q(st, "checking foreign keys");
    while (q.next())
      out += "foreign key: table " + q.col_text(0) + " row " + std::to_string(q.col_int64(1)) +
             " names a missing row of " + q.col_text(2) + "\n";
  }
  if (out.empty()) return "ok";
  out.pop_back();
  return out;
}

}  // namespace ollie::store
