// The run database's connection behind one interface (docs/run-database.md, "Storage
// backends"), internal to the store stage: an SQLite file (sqlite_backend.cpp) or a run in
// a PostgreSQL database (postgres.cpp). The store writes one SQL text for both: `?N`
// placeholders, `INSERT ... ON CONFLICT DO NOTHING RETURNING id`, and the schema's SQLite
// types, which a backend translates (PostgreSQL: `$N`, BIGINT, DOUBLE PRECISION, BIGSERIAL).
// Values only ever travel as bound parameters.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ollie::store::backend {

enum class Dialect { SQLite, PostgreSQL };

// A prepared statement. Parameters are 1-based, columns 0-based. Used through Query.
class Statement {
 public:
  virtual ~Statement() = default;
  virtual void bind_int64(int param, int64_t value) = 0;
  virtual void bind_real(int param, double value) = 0;
  virtual void bind_text(int param, const std::string& value) = 0;
  virtual void bind_null(int param) = 0;
  // Runs the statement on the first call, then moves to the next row: true with a row.
  virtual bool step(const char* what) = 0;
  virtual int64_t col_int64(int col) const = 0;     // 0 for NULL
  virtual double col_real(int col) const = 0;       // 0 for NULL
  virtual std::string col_text(int col) const = 0;  // "" for NULL
  virtual bool col_null(int col) const = 0;
  // Forgets the rows and the bound values, ready to run again.
  virtual void reset() = 0;
};

// One connection to a run.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Dialect dialect() const = 0;
  // The file's path, or the URL (password hidden) and the run's name: for messages.
  virtual const std::string& name() const = 0;
  virtual std::unique_ptr<Statement> prepare(const std::string& sql) = 0;
  // Fixed SQL text (one or more statements, no values).
  virtual void exec(const std::string& sql, const char* what) = 0;
  virtual void begin(const char* what) = 0;
  // A transaction that only reads, from one snapshot of the database (ended by rollback).
  virtual void begin_snapshot(const char* what) = 0;
  virtual void commit(const char* what) = 0;
  virtual void rollback() noexcept = 0;  // ends a transaction if one is open; never throws
  // Whether other processes write the same run (PostgreSQL): the store then keeps no
  // counts of its own.
  virtual bool shared() const = 0;
};

// One use of a Statement: bound parameters, steps, columns; reset when it ends.
class Query {
 public:
  Query(Statement& st, const char* what) : st_(st), what_(what) {}
  ~Query() { st_.reset(); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& int64(int param, int64_t value) {
    st_.bind_int64(param, value);
    return *this;
  }
  Query& real(int param, double value) {
    st_.bind_real(param, value);
    return *this;
  }
  Query& text(int param, const std::string& value) {
    st_.bind_text(param, value);
    return *this;
  }
  Query& null(int param) {
    st_.bind_null(param);
    return *this;
  }
  // int64(param, id), or NULL when id == 0 ("none").
  Query& id_or_null(int param, int64_t id) { return id == 0 ? null(param) : int64(param, id); }

  bool next() { return st_.step(what_); }
  void run() {
    while (next()) {
    }
  }
  int64_t col_int64(int col) const { return st_.col_int64(col); }
  double col_real(int col) const { return st_.col_real(col); }
  std::string col_text(int col) const { return st_.col_text(col); }
  bool col_null(int col) const { return st_.col_null(col); }

 private:
  Statement& st_;
  const char* what_;
};

class SqliteBackend;
// The SQLite backend over a file (flags: SQLITE_OPEN_*). UserError naming `path`.
std::unique_ptr<SqliteBackend> open_sqlite(const std::string& path, int flags);

// The URL with its password replaced by "***" (for messages and the run's records).
std::string hide_password(const std::string& url);

}  // namespace ollie::store::backend
