#include "store/sqlite.h"

#include <sqlite3.h>

#include "support/error.h"

namespace ollie::store::sql {

namespace {

// What the user can do about an SQLite error, by its primary result code.
std::string hint(int rc, const std::string& path) {
  switch (rc & 0xff) {
    case SQLITE_FULL: return "; free disk space, then continue with --resume " + path;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "; another process is writing it (is a run on this file still going?)";
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN: return "; check that the file and its directory exist and are writable";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return "; the file is damaged or is not an ollie run database";
    case SQLITE_IOERR: return "; the disk reported an error";
    default: return "";
  }
}

}  // namespace

Connection::Connection(const std::string& path, int flags) : path_(path) {
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw UserError("run database '" + path + "': cannot open it: " + msg + hint(rc, path));
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  // close_v2: statements still alive are finalized first by their owners (the store
  // declares them after the connection); if one is not, the close is deferred, not lost.
  if (db_) sqlite3_close_v2(db_);
}

void Connection::fail(int rc, const std::string& what) const {
  std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  if ((rc & 0xff) == SQLITE_CONSTRAINT)
    throw InternalError("run database '" + path_ + "': " + msg + " (" + what + ")");
  throw UserError("run database '" + path_ + "': " + msg + " (" + what + ")" + hint(rc, path_));
}

void Connection::exec(const char* sql, const char* what) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, what);
}

int64_t Connection::query_int(const char* sql, const char* what) {
  Statement st(*this, sql);
  Query q(st, what);
  return q.next() ? q.col_int64(0) : 0;
}

std::string Connection::query_text(const char* sql, const char* what) {
  Statement st(*this, sql);
  Query q(st, what);
  return q.next() ? q.col_text(0) : std::string();
}

Statement::Statement(Connection& conn, const char* sql) : conn_(conn) {
  int rc = sqlite3_prepare_v3(conn.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) conn.fail(rc, std::string("preparing: ") + sql);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Query::Query(Statement& st, const char* what) : st_(st), what_(what) {}

Query::~Query() {
  sqlite3_reset(st_.stmt_);
  sqlite3_clear_bindings(st_.stmt_);
}

Query& Query::int64(int param, int64_t value) {
  int rc = sqlite3_bind_int64(st_.stmt_, param, value);
  if (rc != SQLITE_OK) st_.conn_.fail(rc, what_);
  return *this;
}

Query& Query::real(int param, double value) {
  int rc = sqlite3_bind_double(st_.stmt_, param, value);
  if (rc != SQLITE_OK) st_.conn_.fail(rc, what_);
  return *this;
}

Query& Query::text(int param, const std::string& value) {
  int rc = sqlite3_bind_text64(st_.stmt_, param, value.data(), value.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc != SQLITE_OK) st_.conn_.fail(rc, what_);
  return *this;
}

Query& Query::null(int param) {
  int rc = sqlite3_bind_null(st_.stmt_, param);
  if (rc != SQLITE_OK) st_.conn_.fail(rc, what_);
  return *this;
}

Query& Query::id_or_null(int param, int64_t id) { return id == 0 ? null(param) : int64(param, id); }

bool Query::next() {
  int rc = sqlite3_step(st_.stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  st_.conn_.fail(rc, what_);
}

void Query::run() {
  while (next()) {
  }
}

int64_t Query::col_int64(int col) const { return sqlite3_column_int64(st_.stmt_, col); }

double Query::col_real(int col) const { return sqlite3_column_double(st_.stmt_, col); }

std::string Query::col_text(int col) const {
  const unsigned char* p = sqlite3_column_text(st_.stmt_, col);
  int n = sqlite3_column_bytes(st_.stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

}  // namespace ollie::store::sql
