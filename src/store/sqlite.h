// A thin RAII wrapper over the SQLite C API, internal to the store stage: a Connection, a
// Statement prepared once and reused, and a Query (one use of a statement: bound
// parameters, steps, columns; reset when it ends). Values only ever travel as bound
// parameters; exec() takes fixed SQL text only.
#pragma once

#include <cstdint>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace ollie::store::sql {

class Connection {
 public:
  // sqlite3_open_v2 with `flags` (SQLITE_OPEN_*); UserError naming `path` on failure.
  Connection(const std::string& path, int flags);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs fixed SQL text (one or more statements, no values), e.g. the schema or BEGIN.
  void exec(const char* sql, const char* what);
  // The first column of the first row of a fixed query ("PRAGMA user_version").
  int64_t query_int(const char* sql, const char* what);
  std::string query_text(const char* sql, const char* what);

  // Throws for a failed SQLite call: InternalError for a broken constraint (a bug in the
  // caller), UserError naming the file, SQLite's message and what to do otherwise.
  [[noreturn]] void fail(int rc, const std::string& what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(Connection& conn, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

 private:
  friend class Query;
  Connection& conn_;
  sqlite3_stmt* stmt_ = nullptr;
};

// One use of a Statement. Parameters are 1-based, columns 0-based (as in SQLite).
class Query {
 public:
  Query(Statement& st, const char* what);
  ~Query();  // resets the statement and clears its bindings
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& int64(int param, int64_t value);
  Query& real(int param, double value);
  Query& text(int param, const std::string& value);
  Query& null(int param);
  // int64(param, id), or NULL when id == 0 ("none").
  Query& id_or_null(int param, int64_t id);

  // Steps once: true with a row to read, false when done; throws on an error.
  bool next();
  // Steps until done (a write, or a query whose rows are not wanted).
  void run();

  int64_t col_int64(int col) const;  // 0 for NULL
  double col_real(int col) const;
  std::string col_text(int col) const;  // "" for NULL

 private:
  Statement& st_;
  const char* what_;
};

}  // namespace ollie::store::sql
