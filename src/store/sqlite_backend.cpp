// The SQLite backend of the run database (sqlite_backend.h): statements prepared once and
// reused, errors as sql::Connection::fail reports them.
#include "store/sqlite_backend.h"

#include <sqlite3.h>

namespace ollie::store::backend {

namespace {

class SqliteStatement : public Statement {
 public:
  SqliteStatement(sql::Connection& conn, const std::string& sql) : conn_(conn) {
    int rc =
        sqlite3_prepare_v3(conn.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    if (rc != SQLITE_OK) conn.fail(rc, "preparing: " + sql);
  }
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }

  void bind_int64(int param, int64_t value) override {
    check(sqlite3_bind_int64(stmt_, param, value));
  }
  void bind_real(int param, double value) override {
    check(sqlite3_bind_double(stmt_, param, value));
  }
  void bind_text(int param, const std::string& value) override {
    check(sqlite3_bind_text64(stmt_, param, value.data(), value.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8));
  }
  void bind_null(int param) override { check(sqlite3_bind_null(stmt_, param)); }

  bool step(const char* what) override {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    conn_.fail(rc, what);
  }
  int64_t col_int64(int col) const override { return sqlite3_column_int64(stmt_, col); }
  double col_real(int col) const override { return sqlite3_column_double(stmt_, col); }
  std::string col_text(int col) const override {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n))
             : std::string();
  }
  bool col_null(int col) const override { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  void reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) conn_.fail(rc, "binding a value");
  }
  sql::Connection& conn_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

SqliteBackend::SqliteBackend(const std::string& path, int flags) : conn_(path, flags) {}

std::unique_ptr<Statement> SqliteBackend::prepare(const std::string& sql) {
  return std::make_unique<SqliteStatement>(conn_, sql);
}

void SqliteBackend::exec(const std::string& sql, const char* what) {
  conn_.exec(sql.c_str(), what);
}

void SqliteBackend::begin(const char* what) { conn_.exec("BEGIN IMMEDIATE", what); }

// In WAL mode a read transaction sees one snapshot, and writers go on meanwhile.
void SqliteBackend::begin_snapshot(const char* what) { conn_.exec("BEGIN DEFERRED", what); }

void SqliteBackend::commit(const char* what) { conn_.exec("COMMIT", what); }

void SqliteBackend::rollback() noexcept {
  if (sqlite3_get_autocommit(conn_.get())) return;
  // Nothing more to do when it fails: SQLite rolls an unfinished transaction back when the
  // file is next opened.
  sqlite3_exec(conn_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

std::unique_ptr<SqliteBackend> open_sqlite(const std::string& path, int flags) {
  return std::make_unique<SqliteBackend>(path, flags);
}

}  // namespace ollie::store::backend
