// The run database's SQLite backend (backend.h): the store's statements on a file through
// sql::Connection, and what only SQLite has (PRAGMAs, the write-ahead log's checkpoint).
#pragma once

#include <string>

#include "store/backend.h"
#include "store/sqlite.h"

namespace ollie::store::backend {

class SqliteBackend : public Backend {
 public:
  SqliteBackend(const std::string& path, int flags);
  Dialect dialect() const override { return Dialect::SQLite; }
  const std::string& name() const override { return conn_.path(); }
  std::unique_ptr<Statement> prepare(const std::string& sql) override;
  void exec(const std::string& sql, const char* what) override;
  void begin(const char* what) override;
  void begin_snapshot(const char* what) override;
  void commit(const char* what) override;
  void rollback() noexcept override;
  bool shared() const override { return false; }

  sql::Connection& connection() { return conn_; }

 private:
  sql::Connection conn_;
};

}  // namespace ollie::store::backend
