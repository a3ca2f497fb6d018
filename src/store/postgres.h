// The run database's PostgreSQL backend (backend.h; docs/distributed.md): one run is one
// schema of a database, so the store's SQL runs unchanged (search_path names the run) and
// many processes on many machines write the same run. A lost connection (the server
// restarted, the network down) is retried with backoff for the storage timeout, and a
// transaction it cut off is replayed on the new connection.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "store/backend.h"

namespace ollie::store::backend {

struct PostgresOptions {
  // How long a lost connection is retried before StorageUnavailable (store.h).
  double timeout_seconds = 300;
  // Told one line per retry ("the database server is unreachable ...; retrying in 2 s").
  std::function<void(const std::string& line)> progress;
};

class PostgresBackend;
// Connects to `url` (postgresql://...) for the run named `run` (a schema of the database;
// it need not exist yet). UserError naming the URL (its password hidden) when the server
// refuses, StorageUnavailable when it cannot be reached within the timeout.
std::unique_ptr<PostgresBackend> open_postgres(const std::string& url, const std::string& run,
                                               const PostgresOptions& options);

class PostgresBackend : public Backend {
 public:
  ~PostgresBackend() override;
  Dialect dialect() const override { return Dialect::PostgreSQL; }
  const std::string& name() const override { return name_; }
  std::unique_ptr<Statement> prepare(const std::string& sql) override;
  void exec(const std::string& sql, const char* what) override;
  void begin(const char* what) override;
  void begin_snapshot(const char* what) override;
  void commit(const char* what) override;
  void rollback() noexcept override;
  bool shared() const override { return true; }

  // Whether the run's schema exists.
  bool run_exists();
  // Creates the run's schema in the transaction that begin() started; false when another
  // process created it first (the transaction is then rolled back).
  bool create_run_schema();
  // Points the connection at the run's schema (after create_run_schema, or on open).
  void use_run_schema();

  // Internal to postgres.cpp: the statements' way to the server.
  struct Impl;
  std::unique_ptr<Impl> impl_;

 private:
  friend std::unique_ptr<PostgresBackend> open_postgres(const std::string&, const std::string&,
                                                        const PostgresOptions&);
  PostgresBackend() = default;
  std::string name_;
};

// Whether `name` may name a run in PostgreSQL: 1 to 63 of a-z, 0-9, _ and -, starting with
// a letter. UserError naming --run otherwise.
void check_run_name(const std::string& name);

}  // namespace ollie::store::backend
