// Creating and opening a run database (store.h): an SQLite file (exclusive creation, the
// header and schema version checked, older schemas migrated) or a run in a PostgreSQL
// database (one schema per run, created in one transaction, its version in `meta`).
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>

#include "store/db.h"
#include "store/postgres.h"
#include "store/schema.h"
#include "store/sqlite_backend.h"
#include "store/store.h"
#include "support/error.h"
#include "support/strings.h"

namespace ollie::store {

using namespace schema;

namespace {

// Per connection: WAL is recorded in the file, the others are not.
constexpr const char* kConnectionPragmas = "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;";
constexpr int kBusyTimeoutMs = 10000;

std::unique_ptr<detail::Db> prepared(std::unique_ptr<backend::Backend> backend) {
  auto db = std::make_unique<detail::Db>(std::move(backend));
  db->prepare();
  return db;
}

// The meta and run rows of a new run (inside the transaction that creates the schema).
void write_run(backend::Backend& b, const RunInfo& info) {
  auto meta = b.prepare("INSERT INTO meta(key, value) VALUES(?1, ?2)");
  backend::Query(*meta, "writing meta").text(1, "format").text(2, "ollie run database").run();
  backend::Query(*meta, "writing meta")
      .text(1, "schema_version")
      .text(2, std::to_string(kSchemaVersion))
      .run();
  auto run = b.prepare(
      "INSERT INTO run(id, spec_path, spec_source, spec_sha256, entry, dims_json, machine_json, "
      "options_json, seed, created) VALUES(1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  backend::Query(*run, "writing the run")
      .text(1, info.spec_path)
      .text(2, info.spec_source)
      .text(3, info.spec_sha256)
      .text(4, info.entry)
      .text(5, info.dims_json)
      .text(6, info.machine_json)
      .text(7, info.options_json)
      .int64(8, std::bit_cast<int64_t>(info.seed))
      .text(9, info.created.empty() ? strings::utc_now_iso8601_ms() : info.created)
      .run();
}

}  // namespace

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
    auto backend = backend::open_sqlite(path, SQLITE_OPEN_READWRITE);
    sql::Connection& conn = backend->connection();
    sqlite3_busy_timeout(conn.get(), kBusyTimeoutMs);
    if (conn.query_text("PRAGMA journal_mode = WAL", "switching to WAL") != "wal")
      throw UserError("run database '" + path +
                      "': SQLite cannot use a write-ahead log there (is it on a network file "
                      "system?); choose a local directory with -o");
    conn.exec(kConnectionPragmas, "setting up the connection");
    conn.exec("BEGIN IMMEDIATE", "creating the schema");
    conn.exec(kSchema, "creating the schema");
    // The numbers are constants of this file, not values from outside.
    conn.exec(("PRAGMA application_id = " + std::to_string(kApplicationId) +
               "; PRAGMA user_version = " + std::to_string(kSchemaVersion))
                  .c_str(),
              "writing the schema version");
    write_run(*backend, info);
    conn.exec("COMMIT", "creating the run database");
    // The file's name in its directory survives a power cut too (SQLite syncs the
    // directory for the log it creates, not for a database file made by someone else).
    std::string dir = std::filesystem::path(path).parent_path().string();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return Store(prepared(std::move(backend)));
  } catch (...) {
    remove_files();
    throw;
  }
}

namespace {

// Whether the column migration `m` adds is there already.
bool sqlite_has_column(sql::Connection& conn, const Migration& m) {
  if (!m.table) return false;
  sql::Statement st(conn, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2");
  sql::Query q(st, "reading the schema");
  q.text(1, m.table).text(2, m.column);
  return q.next();
}

// Brings a file of schema `version` up to kSchemaVersion (kMigrations), in one transaction.
void migrate(sql::Connection& conn, int64_t version) {
  if (version >= kSchemaVersion) return;
  conn.exec("BEGIN IMMEDIATE", "migrating the schema");
  try {
    for (const Migration& m : kMigrations)
      if (m.to > version && !sqlite_has_column(conn, m)) conn.exec(m.sql, "migrating the schema");
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

  auto backend = backend::open_sqlite(path, SQLITE_OPEN_READWRITE);
  sql::Connection& conn = backend->connection();
  sqlite3_busy_timeout(conn.get(), kBusyTimeoutMs);
  if (sqlite3_db_readonly(conn.get(), "main") == 1)
    throw UserError("run database '" + path +
                    "' is read-only; ollie writes to it while it runs: make it writable");
  int64_t app_id = conn.query_int("PRAGMA application_id", "reading the header");
  int64_t version = conn.query_int("PRAGMA user_version", "reading the header");
  if (app_id != kApplicationId)
    throw UserError(not_ours + " (it is an SQLite database written by something else)");
  if (version > kSchemaVersion)
    throw UserError("run database '" + path + "' was written by a newer ollie (schema version " +
                    std::to_string(version) + "; this ollie reads up to " +
                    std::to_string(kSchemaVersion) + "); open it with that ollie or a newer one");
  if (version < 1) throw UserError(not_ours + " (it has no schema version; the file is damaged)");
  migrate(conn, version);
  if (conn.query_text("PRAGMA journal_mode = WAL", "switching to WAL") != "wal")
    throw UserError("run database '" + path +
                    "': SQLite cannot use a write-ahead log there (is it on a network file "
                    "system?); copy it to a local directory");
  conn.exec(kConnectionPragmas, "setting up the connection");
  if (conn.query_int("SELECT count(*) FROM run", "reading the run") != 1)
    throw UserError(not_ours + " (it has no run record; the file is damaged)");
  return Store(prepared(std::move(backend)));
}

// ---- PostgreSQL ----

namespace {

backend::PostgresOptions pg_options(const Location& where) {
  backend::PostgresOptions o;
  o.timeout_seconds = where.timeout_seconds;
  o.progress = where.progress;
  return o;
}

std::string pg_version_text(backend::Backend& b) {
  auto st = b.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
  backend::Query q(*st, "reading the schema version");
  return q.next() ? q.col_text(0) : std::string();
}

bool postgres_has_column(backend::Backend& b, const Migration& m) {
  if (!m.table) return false;
  auto st = b.prepare(
      "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
      "table_name = ?1 AND column_name = ?2");
  backend::Query q(*st, "reading the schema");
  q.text(1, m.table).text(2, m.column);
  return q.next();
}

// Brings a PostgreSQL run of schema `version` up to kSchemaVersion, in one transaction
// that holds the meta table's lock (two workers opening an old run migrate it once).
void migrate_postgres(backend::Backend& b) {
  b.begin("migrating the schema");
  try {
    b.exec("LOCK TABLE meta IN EXCLUSIVE MODE", "migrating the schema");
    const int64_t version = std::stoll(pg_version_text(b));
    if (version < kSchemaVersion) {
      for (const Migration& m : kMigrations)
        if (m.to > version && !postgres_has_column(b, m)) b.exec(m.sql, "migrating the schema");
      b.exec("UPDATE meta SET value = '" + std::to_string(kSchemaVersion) +
                 "' WHERE key = 'schema_version'",
             "migrating the schema");
    }
    b.commit("migrating the schema");
  } catch (...) {
    b.rollback();
    throw;
  }
}

// A run made before the counters (schema::kPostgresCounters) gets them, filled from its
// rows, once: under the meta table's lock, as a migration.
void ensure_counters(backend::Backend& b) {
  auto has_counters = [&b] {
    auto st = b.prepare(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND "
        "table_name = 'counters'");
    backend::Query q(*st, "reading the schema");
    return q.next();
  };
  if (has_counters()) return;
  b.begin("adding the run's counters");
  try {
    b.exec("LOCK TABLE meta IN EXCLUSIVE MODE", "adding the run's counters");
    if (!has_counters()) {
      b.exec(kPostgresCounters, "adding the run's counters");
      b.exec(kRecountCounters, "adding the run's counters");
    }
    b.commit("adding the run's counters");
  } catch (...) {
    b.rollback();
    throw;
  }
}

std::unique_ptr<detail::Db> open_postgres_run(const Location& where) {
  auto b = backend::open_postgres(where.url, where.run, pg_options(where));
  const std::string name = where.describe();
  if (!b->run_exists())
    throw UserError("run database " + name +
                    ": no such run; start it with `ollie optimize SPEC --storage " +
                    backend::hide_password(where.url) + " --run " + where.run + " ...`");
  b->use_run_schema();
  std::string version_text;
  try {
    version_text = pg_version_text(*b);
  } catch (const UserError&) {
    throw UserError("run database " + name + ": the schema '" + where.run +
                    "' exists but is not an ollie run (it has no meta table); choose another "
                    "--run");
  }
  if (version_text.empty() || version_text.find_first_not_of("0123456789") != std::string::npos)
    throw UserError("run database " + name + " has no schema version; the run is damaged");
  const int64_t version = std::stoll(version_text);
  if (version > kSchemaVersion)
    throw UserError("run database " + name + " was written by a newer ollie (schema version " +
                    version_text + "; this ollie reads up to " + std::to_string(kSchemaVersion) +
                    "); use that ollie or a newer one");
  if (version < kSchemaVersion) migrate_postgres(*b);
  ensure_counters(*b);
  return prepared(std::move(b));
}

}  // namespace

Store Store::create(const Location& where, const RunInfo& info) {
  if (!where.postgres()) return create(where.path, info);
  auto b = backend::open_postgres(where.url, where.run, pg_options(where));
  b->begin("creating the run");
  try {
    if (!b->create_run_schema())
      throw UserError("run database " + where.describe() +
                      ": the run exists; join it with the same SPEC and options, or choose "
                      "another --run");
    b->use_run_schema();
    b->exec(kSchema, "creating the schema");
    b->exec(kPostgresCounters, "creating the schema");
    write_run(*b, info);
    b->commit("creating the run");
  } catch (...) {
    b->rollback();
    throw;
  }
  return Store(prepared(std::move(b)));
}

Store Store::open(const Location& where) {
  return where.postgres() ? Store(open_postgres_run(where)) : open(where.path);
}

Store Store::create_or_open(const Location& where, const RunInfo& info, bool& created) {
  if (!where.postgres()) {
    created = !std::filesystem::exists(where.path);
    return created ? create(where.path, info) : open(where.path);
  }
  try {
    Store s = create(where, info);
    created = true;
    return s;
  } catch (const StorageUnavailable&) {
    throw;
  } catch (const UserError& e) {
    if (std::string(e.what()).find("the run exists") == std::string::npos) throw;
  }
  created = false;
  return open(where);
}

// ---- Location ----

Location Location::parse(const std::string& storage, const std::string& run) {
  Location l;
  if (storage.rfind("postgresql://", 0) == 0 || storage.rfind("postgres://", 0) == 0) {
    if (run.empty())
      throw UserError("--storage " + backend::hide_password(storage) +
                      ": a PostgreSQL database holds many runs; name this one with --run NAME");
    backend::check_run_name(run);
    l.url = storage;
    l.run = run;
    return l;
  }
  if (storage.rfind("sqlite:", 0) == 0 && storage.size() > 7) {
    if (!run.empty())
      throw UserError("--run " + run +
                      ": an SQLite file holds one run; --run names a run in a PostgreSQL "
                      "database (--storage postgresql://...)");
    l.path = storage.substr(7);
    return l;
  }
  throw UserError("--storage " + backend::hide_password(storage) +
                  ": give sqlite:PATH (a run database file) or postgresql://USER@HOST/DB "
                  "(a PostgreSQL database, with --run NAME)");
}

std::string Location::describe() const {
  return postgres() ? "'" + backend::hide_password(url) + "' (run " + run + ")" : "'" + path + "'";
}

}  // namespace ollie::store
