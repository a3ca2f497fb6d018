// The per-user tuning database (see tuning_db.h): one SQLite file, WAL journal, a busy
// timeout, and every write in one IMMEDIATE transaction, so concurrent runs share it.
#include "store/tuning_db.h"

#include <sqlite3.h>

#include <filesystem>

#include "store/sqlite.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/strings.h"

namespace ollie::store {

namespace {

constexpr const char* kTuningSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kernels(
  id INTEGER PRIMARY KEY,
  source_sha256 TEXT NOT NULL,
  source TEXT NOT NULL,
  schedule TEXT NOT NULL,
  rewrites TEXT NOT NULL,
  proposer TEXT NOT NULL,
  spec_sha256 TEXT NOT NULL,
  entry TEXT NOT NULL,
  graph_signature TEXT NOT NULL,
  dims_json TEXT NOT NULL,
  machine TEXT NOT NULL,
  seconds REAL NOT NULL,
  ratio_vs_baseline REAL NOT NULL,
  run_path TEXT NOT NULL,
  candidate INTEGER NOT NULL,
  created TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS kernels_key
  ON kernels(graph_signature, dims_json, machine, source_sha256);
CREATE INDEX IF NOT EXISTS kernels_spec ON kernels(spec_sha256);
INSERT OR IGNORE INTO meta(key, value) VALUES('format', 'ollie tuning database');
)sql";

constexpr const char* kKernelColumns =
    "id, source, schedule, rewrites, proposer, spec_sha256, entry, graph_signature, dims_json, "
    "machine, seconds, ratio_vs_baseline";

std::string what_to_do(const std::string& path) {
  return "; delete '" + path +
         "' (it only speeds up later runs), choose another with "
         "--tuning-db PATH, or pass --no-tuning-db";
}

}  // namespace

namespace detail {
class TuningConnection {
 public:
  TuningConnection(const std::string& path, int flags) : conn(path, flags) {}
  sql::Connection conn;
};
}  // namespace detail

TuningDb::TuningDb(std::unique_ptr<detail::TuningConnection> conn) : conn_(std::move(conn)) {}
TuningDb::TuningDb(TuningDb&&) noexcept = default;
TuningDb& TuningDb::operator=(TuningDb&&) noexcept = default;
TuningDb::~TuningDb() = default;

const std::string& TuningDb::path() const { return conn_->conn.path(); }

TuningDb TuningDb::open(const std::string& path, bool create) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (!exists && !create) throw UserError("tuning database '" + path + "' not found");
  if (exists && !std::filesystem::is_regular_file(path, ec))
    throw UserError("tuning database '" + path + "' is not a file" + what_to_do(path));
  if (!exists) {
    const auto dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  }
  try {
    auto c = std::make_unique<detail::TuningConnection>(
        path, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0));
    sqlite3_busy_timeout(c->conn.get(), 10000);
    if (c->conn.query_text("PRAGMA journal_mode = WAL", "switching to WAL") != "wal")
      throw UserError("SQLite cannot use a write-ahead log there");
    c->conn.exec("PRAGMA synchronous = NORMAL", "setting up the connection");
    // A file with tables is one of ours or is left alone (never a run database given by
    // mistake, which would get our tables).
    c->conn.exec("BEGIN IMMEDIATE", "creating the schema");
    const bool empty =
        c->conn.query_int("SELECT count(*) FROM sqlite_master", "reading the schema") == 0;
    if (!empty && (c->conn.query_int("SELECT count(*) FROM sqlite_master WHERE name = 'meta'",
                                     "reading the schema") == 0 ||
                   c->conn.query_text("SELECT value FROM meta WHERE key = 'format'",
                                      "reading meta") != "ollie tuning database")) {
      sqlite3_exec(c->conn.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw UserError("it is an SQLite file but not an ollie tuning database");
    }
    c->conn.exec(kTuningSchema, "creating the schema");
    c->conn.exec("COMMIT", "creating the schema");
    return TuningDb(std::move(c));
  } catch (const UserError& e) {
    throw UserError("tuning database '" + path + "': " + e.what() + what_to_do(path));
  }
}

int64_t TuningDb::add(const TunedKernel& k) {
  try {
    auto& conn = conn_->conn;
    conn.exec("BEGIN IMMEDIATE", "adding a kernel");
    try {
      sql::Statement insert(
          conn,
          "INSERT OR REPLACE INTO kernels(source_sha256, source, schedule, rewrites, proposer, "
          "spec_sha256, entry, graph_signature, dims_json, machine, seconds, ratio_vs_baseline, "
          "run_path, candidate, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
          "?12, ?13, ?14, ?15)");
      sql::Query(insert, "adding a kernel")
          .text(1, sha256_hex(k.source))
          .text(2, k.source)
          .text(3, k.schedule)
          .text(4, k.rewrites)
          .text(5, k.proposer)
          .text(6, k.spec_sha256)
          .text(7, k.entry)
          .text(8, k.graph_signature)
          .text(9, k.dims_json)
          .text(10, k.machine)
          .real(11, k.seconds)
          .real(12, k.ratio_vs_baseline)
          .text(13, k.run_path)
          .int64(14, k.candidate)
          .text(15, strings::utc_now_iso8601())
          .run();
      const int64_t id = sqlite3_last_insert_rowid(conn.get());
      conn.exec("COMMIT", "adding a kernel");
      return id;
    } catch (...) {
      sqlite3_exec(conn.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  } catch (const UserError& e) {
    throw UserError("tuning database '" + path() + "': " + e.what() + what_to_do(path()));
  }
}

std::vector<StoredKernel> TuningDb::matching(const std::string& spec_sha256,
                                             const std::string& graph_signature,
                                             const std::string& dims_json,
                                             const std::string& machine, int limit) const {
  std::vector<StoredKernel> out;
  try {
    sql::Statement st(
        conn_->conn,
        (std::string("SELECT ") + kKernelColumns +
         " FROM kernels WHERE machine = ?1 AND (spec_sha256 = ?2 OR graph_signature = ?3) "
         "ORDER BY dims_json != ?4, CASE WHEN ratio_vs_baseline > 0 THEN ratio_vs_baseline "
         "ELSE 1e300 END, seconds, id LIMIT ?5")
            .c_str());
    sql::Query q(st, "reading kernels");
    q.text(1, machine)
        .text(2, spec_sha256)
        .text(3, graph_signature)
        .text(4, dims_json)
        .int64(5, limit);
    while (q.next()) {
      StoredKernel k;
      k.id = q.col_int64(0);
      k.origin = path() + " #" + std::to_string(k.id);
      k.source = q.col_text(1);
      k.schedule = q.col_text(2);
      k.rewrites = q.col_text(3);
      k.proposer = q.col_text(4);
      k.spec_sha256 = q.col_text(5);
      k.entry = q.col_text(6);
      k.graph_signature = q.col_text(7);
      k.dims_json = q.col_text(8);
      k.machine = q.col_text(9);
      k.seconds = q.col_real(10);
      k.ratio_vs_baseline = q.col_real(11);
      out.push_back(std::move(k));
    }
  } catch (const UserError& e) {
    throw UserError("tuning database '" + path() + "': " + e.what() + what_to_do(path()));
  }
  return out;
}

int64_t TuningDb::count() const {
  return conn_->conn.query_int("SELECT count(*) FROM kernels", "counting kernels");
}

}  // namespace ollie::store
