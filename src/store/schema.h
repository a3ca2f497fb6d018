// The run database's schema (docs/run-database.md, "Tables"), internal to the store stage:
// the tables in SQLite's dialect (the PostgreSQL backend translates the types), the
// schema version and the migrations from older versions.
#pragma once

#include <cstdint>

namespace ollie::store::schema {

// PRAGMA application_id of every run database: "olli". A file without it is not ours.
inline constexpr int64_t kApplicationId = 0x6F6C6C69;
// PRAGMA user_version: the schema this ollie writes. Raise it (and add a migration in
// Store::open) when a table changes.
inline constexpr int64_t kSchemaVersion = 3;

// What turns a file of version `to - 1` into version `to`, in order (Store::open runs the
// ones above the file's version in one transaction). Columns are only ever added at the
// end of a table, nullable or with a default, so rows written before stay valid.
struct Migration {
  int64_t to;
  const char* sql;
  // A column the migration adds: skipped when the table has it already (a file that a
  // development build made in between).
  const char* table = nullptr;
  const char* column = nullptr;
};
inline constexpr Migration kMigrations[] = {
    // 2: the cost model's prediction of each candidate (docs/search.md, "The cost model").
    {2, "ALTER TABLE candidates ADD COLUMN predicted REAL DEFAULT NULL", "candidates", "predicted"},
    // 3: workers of a shared run, their claims, and which worker made each evaluation
    // (docs/distributed.md).
    {3,
     "CREATE TABLE IF NOT EXISTS workers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, fingerprint "
     "TEXT NOT NULL, machine_json TEXT NOT NULL, seed INTEGER NOT NULL, first_chain INTEGER NOT "
     "NULL, chains INTEGER NOT NULL, started TEXT NOT NULL, heartbeat REAL NOT NULL, stopped TEXT "
     "DEFAULT NULL); CREATE TABLE IF NOT EXISTS claims(hash TEXT PRIMARY KEY, worker INTEGER NOT "
     "NULL REFERENCES workers(id), claimed REAL NOT NULL)"},
    {3, "ALTER TABLE evaluations ADD COLUMN worker INTEGER REFERENCES workers(id) DEFAULT NULL",
     "evaluations", "worker"},
};

// PostgreSQL only (docs/distributed.md, "Counting"): the run's row counts kept by the
// writes, one row per worker (0: writes of no worker), each add_* adding to its own row in
// the statement that adds the rows, so counting the run reads a row per worker instead of
// scanning every table. SQLite keeps its counts in the one process that writes a file.
inline constexpr const char* kPostgresCounters = R"sql(
CREATE TABLE IF NOT EXISTS counters(
  worker BIGINT PRIMARY KEY,
  candidates BIGINT NOT NULL DEFAULT 0,
  evaluations BIGINT NOT NULL DEFAULT 0,
  steps BIGINT NOT NULL DEFAULT 0,
  accepted_steps BIGINT NOT NULL DEFAULT 0,
  passes BIGINT NOT NULL DEFAULT 0,
  events BIGINT NOT NULL DEFAULT 0,
  model_calls BIGINT NOT NULL DEFAULT 0);
)sql";
// The counters from the rows themselves (a run copied in, or made before the counters).
inline constexpr const char* kRecountCounters = R"sql(
DELETE FROM counters;
INSERT INTO counters(worker, candidates, evaluations, steps, accepted_steps, passes, events,
                     model_calls)
SELECT 0, (SELECT count(*) FROM candidates), (SELECT count(*) FROM evaluations),
       (SELECT count(*) FROM steps), (SELECT count(*) FROM steps WHERE accepted = 1),
       (SELECT count(DISTINCT candidate) FROM evaluations WHERE verdict = 'pass'),
       (SELECT count(*) FROM events), (SELECT count(*) FROM model_calls);
)sql";

// The whole schema. Every value a row needs is NOT NULL except the ids that mean "none"
// (a candidate's parent, a step's candidates), which are NULL rather than 0 so that the
// foreign keys hold.
inline constexpr const char* kSchema = R"sql(
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

CREATE TABLE IF NOT EXISTS workers(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,               -- host:pid
  fingerprint TEXT NOT NULL,        -- the machine kind (CPU model, ISA, CPUs)
  machine_json TEXT NOT NULL,
  seed INTEGER NOT NULL,            -- the worker's own seed (bits as a signed integer)
  first_chain INTEGER NOT NULL,     -- its chains are first_chain, first_chain + 1, ...
  chains INTEGER NOT NULL,
  started TEXT NOT NULL,
  heartbeat REAL NOT NULL,          -- seconds since 1970 on the database's clock
  stopped TEXT DEFAULT NULL);

CREATE TABLE IF NOT EXISTS claims(
  hash TEXT PRIMARY KEY,            -- the candidate's source hash
  worker INTEGER NOT NULL REFERENCES workers(id),
  claimed REAL NOT NULL);           -- seconds since 1970 on the database's clock

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
  created TEXT NOT NULL,
  worker INTEGER REFERENCES workers(id) DEFAULT NULL);  -- NULL: a run without workers
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

}  // namespace ollie::store::schema
