// The run database (docs/design.md section 10): one SQLite file per `ollie optimize` run (or
// a run in a PostgreSQL database that many workers share; backend.h, postgres.h) that
// holds the spec, dims, machine and options of the run, every candidate (source, schedule
// or rewrite chain, parent, proposer), every evaluation (verdict, certificate, timings),
// every step of every chain, the language-model requests and answers, and events. Rows are
// written as they happen, each add_* in its own transaction (or grouped by a Transaction),
// so a run stopped at any moment can be resumed with nothing evaluated lost; see
// docs/run-database.md for the tables and how resume uses them.
//
// Durability: the file is in WAL journal mode with synchronous=FULL. A transaction is
// committed by appending it to the write-ahead log, and with FULL the log is fsync'ed
// before the commit returns, so a row that add_* (or Transaction::commit) returned for is
// on the disk and survives a power cut, not only a killed process. (With NORMAL, the
// SQLite default for WAL, a power cut may lose the last commits: the database stays
// consistent but an evaluated candidate could be forgotten and evaluated again.) A
// transaction that had not committed is rolled back when the file is next opened, so a
// reader never sees half of one. Foreign keys are enforced (an evaluation or a step names
// a candidate that exists), and a busy timeout lets a second process (a live report)
// read while the run writes.
//
// Memory: the store keeps no rows in memory; every read goes to the file, and SQLite's
// page cache is bounded (its default, about 2 MiB), so a process that writes a long run
// does not grow with it. Only what a caller asks for (model_calls, best) is returned in
// memory.
//
// Threads: every call is serialized by a mutex, so evaluator threads may add rows to one
// Store; a Transaction holds the store for its thread from creation until it ends (other
// threads' calls wait), and must end on that thread, before the Store is destroyed.
// Processes: one process writes an SQLite run; others (a live report) may open it and read.
// A run in PostgreSQL (Location, docs/distributed.md) is written by many worker processes
// at once: they claim candidates (claim()) so that none is evaluated twice, and the store
// keeps no row counts of its own there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/error.h"

namespace ollie::store {

// The run's database server could not be reached for the storage timeout (a PostgreSQL
// run, docs/distributed.md): the worker stops; nothing it committed is lost.
class StorageUnavailable : public UserError {
 public:
  using UserError::UserError;
};

// Where a run is kept (docs/run-database.md, "Storage"): an SQLite file, or a run (a
// schema) in a PostgreSQL database that many processes may work on at once.
struct Location {
  std::string path;  // SQLite: the file
  std::string url;   // PostgreSQL: postgresql://...; empty for SQLite
  std::string run;   // PostgreSQL: the run's name
  // PostgreSQL: how long a lost connection is retried (with backoff) before
  // StorageUnavailable, and where a line per retry goes.
  double timeout_seconds = 300;
  std::function<void(const std::string& line)> progress;

  bool postgres() const { return !url.empty(); }
  // From --storage and --run: "sqlite:PATH" or a path (SQLite; --run must be empty), or
  // "postgresql://..." / "postgres://..." (--run names the run). UserError naming the flag.
  static Location parse(const std::string& storage, const std::string& run);
  // The file, or the URL (password hidden) and the run, for messages.
  std::string describe() const;
};

// The run itself: one row, written by create() and never changed.
struct RunInfo {
  std::string spec_path;     // as the user gave it
  std::string spec_source;   // the spec's full text (the run does not need the file again)
  std::string spec_sha256;   // hex SHA-256 of spec_source
  std::string entry;         // the spec function being optimized
  std::string dims_json;     // {"M": 512, ...}
  std::string machine_json;  // CPU, cores, compiler, ...
  std::string options_json;  // the command line options as JSON
  uint64_t seed = 0;
  std::string created;  // ISO 8601 UTC ("2024-05-01T12:34:56.789Z"); filled when empty
};

// A candidate kernel. Identified by `hash`, the hex SHA-256 of `source`
// (ollie::sha256_hex): one row per distinct source.
struct Candidate {
  int64_t id = 0;        // assigned by add_candidate
  std::string hash;      // filled by add_candidate (must match source when given)
  std::string source;    // the kernel's C++ source
  std::string schedule;  // the schedule it was emitted from (text; may be empty)
  std::string rewrites;  // the rewrite chain applied to the IR (text; may be empty)
  int64_t parent = 0;    // the candidate it was proposed from; 0 = none
  std::string proposer;  // "baseline", "mutate", "rewrite", "llm", "cmd", ...
  std::string created;   // ISO UTC; filled when empty
  // The search's cost model's prediction, log(time / baseline time); none when the model
  // was off, not trained yet, or cannot read the candidate (free-form source). Written by
  // add_candidate; read back by predictions() (candidate() leaves it empty).
  std::optional<double> predicted;
};

// One evaluation of a candidate: verification and, when it passed, timing.
struct Evaluation {
  int64_t id = 0;                // assigned by add_evaluation
  int64_t candidate = 0;         // Candidate::id
  std::string verdict;           // verify::verdict_name: "pass", "wrong", "compile-error", ...
  std::string message;           // the verifier's or compiler's explanation
  double penalty = 0;            // correctness penalty in [0, 1] (0 for a pass)
  std::string certificate_json;  // the verifier's certificate
  double median_seconds = 0;     // timings of one kernel call (0 when not measured)
  double min_seconds = 0;
  double mad_seconds = 0;
  double ratio_vs_baseline = 0;  // candidate time / baseline time; 0 when unknown
  int rounds = 0;                // timed rounds
  double cost = 0;               // the search's cost of this candidate (penalty + performance)
  double eval_seconds = 0;       // wall time the evaluation took
  std::string created;           // ISO UTC; filled when empty
};

// One step of a Markov chain: a proposal and the Metropolis-Hastings decision.
struct Step {
  int64_t step = 0;  // run-wide step number (next_step()); unique per chain
  int chain = 0;
  int64_t proposed = 0;  // candidate id proposed
  int64_t current = 0;   // candidate id the chain is at after the decision
  bool accepted = false;
  double temperature = 0;
  double cost_current = 0;  // cost of the chain's candidate before the decision
  double cost_proposed = 0;
  std::string note;  // e.g. "restart", "rejected: compile-error"
};

// One language-model request and its answer, stored so a run can be replayed without the
// model. Only the request body goes here, never headers: API keys are not stored (and
// add_model_call replaces any value of an environment variable whose name contains KEY,
// TOKEN or SECRET by "[redacted]", as a second line of defence).
struct ModelCall {
  int64_t id = 0;        // assigned by add_model_call; replay order
  std::string proposer;  // the proposer that asked ("llm", "llm:claude", ...)
  std::string request;   // the request as sent (JSON body or prompt text)
  std::string answer;    // the answer's full text (or error body)
  std::string status;    // "ok", "http_error", "timeout", "refused", ...
  int http_status = 0;   // 0 when no HTTP answer
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
  double cost = 0;      // in the currency of the budget (e.g. USD)
  double seconds = 0;   // wall time of the call
  std::string created;  // ISO UTC; filled when empty
};

// A process working on a shared run (docs/distributed.md): its chains, its seed and the
// machine it times on. Registered by add_worker; its evaluations and claims name it.
struct Worker {
  int64_t id = 0;           // assigned by add_worker
  std::string name;         // "host:pid"
  std::string fingerprint;  // the machine kind: workers time candidates on their own machine
  std::string machine_json;
  uint64_t seed = 0;
  int first_chain = 0;       // its chains are first_chain, ..., first_chain + chains - 1
  int chains = 0;            // (steps.chain)
  std::string started;       // ISO UTC; filled when empty
  bool stopped = false;      // said it stopped (stop_worker)
  double heartbeat_age = 0;  // seconds since its last heartbeat, on the database's clock
};

// What claim() found.
enum class Claim {
  Ours,        // this worker evaluates the candidate now
  Evaluating,  // another live worker claimed it and has not recorded its evaluation yet
  Evaluated,   // it has an evaluation
};

struct Counts {
  int64_t candidates = 0;
  int64_t evaluations = 0;
  int64_t steps = 0;
  int64_t accepted_steps = 0;
  int64_t passes = 0;  // candidates with at least one passing evaluation
  int64_t events = 0;
  int64_t model_calls = 0;
};

class Store;
namespace detail {
class Db;  // the connection, its prepared statements and its lock (store.cpp)
}

// Groups several add_* calls into one atomic transaction: either all of them are in the
// file or none (e.g. a candidate, its evaluation and the step that proposed it). Commits
// on commit(); rolls back when destroyed without commit() (an exception, a return).
// Not movable: it holds the store's lock for its thread, from Store::transaction() until
// commit() or destruction. Transactions do not nest (InternalError).
class Transaction {
 public:
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  friend class Store;
  explicit Transaction(detail::Db* db);
  detail::Db* db_;
  bool done_ = false;
};

// A run database. Errors from SQLite (a full disk, a read-only file, a database locked by
// another writer) are UserErrors naming the file; a constraint broken by the caller (an
// evaluation of a candidate that does not exist, a step number used twice in a chain) is
// an InternalError.
class Store {
 public:
  // Creates a new run database at `path` holding `run`. UserError if the file exists
  // ("run database 'X' exists; resume it with --resume X or choose another -o") or cannot
  // be created. The file is created exclusively and filled in one transaction: a process
  // killed while creating leaves a file that open() rejects, never a half-written run.
  static Store create(const std::string& path, const RunInfo& run);
  // Opens an existing run database for reading and writing. UserError naming the path if
  // it is missing, not an SQLite file, an SQLite file that is not an ollie run database,
  // or one written by a newer ollie (a higher schema version).
  static Store open(const std::string& path);
  // The same for any Location. PostgreSQL: create() makes the run's schema and tables in
  // one transaction (UserError when the run exists); open() checks the schema version.
  static Store create(const Location& where, const RunInfo& run);
  static Store open(const Location& where);
  // Creates the run, or opens it when it exists (another worker created it first);
  // `created` says which.
  static Store create_or_open(const Location& where, const RunInfo& run, bool& created);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  // The SQLite file's path, or the PostgreSQL URL (password hidden) and the run's name.
  const std::string& path() const;
  // Whether other processes may write the run at the same time (PostgreSQL).
  bool shared() const;
  // The schema version this ollie writes (PRAGMA user_version of every file it creates).
  static int schema_version();

  RunInfo run() const;

  // Adds a candidate and returns its id; idempotent on the source's hash: a source already
  // in the database returns the existing id and changes nothing (its parent and proposer
  // stay the first ones). InternalError if c.hash is given and is not the source's hash.
  int64_t add_candidate(Candidate c);
  std::optional<Candidate> candidate(int64_t id) const;
  std::optional<Candidate> candidate_by_hash(const std::string& hash) const;

  int64_t add_evaluation(const Evaluation& e);
  // The latest evaluation of a candidate (highest id), if any.
  std::optional<Evaluation> evaluation_of(int64_t candidate) const;

  void add_step(const Step& s);
  // The chain's step with the highest step number, if any.
  std::optional<Step> last_step(int chain) const;
  // One past the highest step number of any chain; 0 when there are no steps.
  int64_t next_step() const;

  void add_event(const std::string& kind, const std::string& text);

  int64_t add_model_call(const ModelCall& call);
  // The proposer's calls in the order they were added (by id), those with id > after_id,
  // at most `limit` of them (all when limit < 0): replay can page through a long run.
  std::vector<ModelCall> model_calls(const std::string& proposer, int64_t after_id = 0,
                                     int64_t limit = -1) const;

  // The fastest passing candidates: those whose latest evaluation is "pass" with a
  // measured median (median_seconds > 0), by median_seconds ascending (ties by
  // evaluation id), at most `limit`. With a machine kind set (set_machine_kind, a worker),
  // only evaluations timed on that kind count: times of two machines do not compare.
  std::vector<std::pair<Candidate, Evaluation>> best(int limit) const;

  Counts counts() const;

  // The cost model's accuracy over the run: for each candidate with a prediction whose
  // latest evaluation passed with a ratio to the baseline, (predicted, ratio_vs_baseline),
  // by candidate id.
  std::vector<std::pair<double, double>> predictions() const;

  // Copies the run at `from` into a new run at `to` (`ollie export`, `ollie import`): every
  // row of every table but the claims, ids kept, read from one snapshot (workers may go on
  // writing `from`) and written in one transaction. UserError when `to` exists.
  static void copy(const Location& from, const Location& to);

  // ---- Workers of a shared run (docs/distributed.md) ----

  // Registers this process as a worker of the run with w.chains chains, numbered from the
  // first free chain number (after every chain of earlier workers and steps); returns the
  // worker with its id and first_chain. From then on this Store's evaluations record the
  // worker, and claim() claims for it.
  Worker add_worker(Worker w);
  std::vector<Worker> workers() const;
  // This worker is alive (call it more often than the lease that claim() is given).
  void heartbeat();
  // This worker has stopped: its claims are free at once.
  void stop_worker();
  // Claims the candidate of source hash `hash` before evaluating it, so that no two
  // workers evaluate one candidate: Ours when nobody holds it, or its holder's heartbeat
  // is older than `lease_seconds` (a killed worker), and it has no evaluation yet. A Store
  // without a worker (add_worker) always gets Ours. `here`: a claim to time it on this
  // worker's machine kind although another kind evaluated it (a claim of its own, and
  // Evaluated only for an evaluation on this kind).
  Claim claim(const std::string& hash, double lease_seconds, bool here = false);
  // This Store's worker id (0: none).
  int64_t worker_id() const;
  // ---- Machine kinds (docs/distributed.md, "Mixed machines") ----
  // A run's evaluations are timed on the machine of the worker that made them (its
  // fingerprint; an evaluation without a worker, on the run's own machine). Sets the kind
  // that best(), evaluation_here() and claim(here) are about; add_worker sets its worker's.
  // Empty (the default without a worker): every evaluation, whatever its machine.
  void set_machine_kind(const std::string& fingerprint);
  const std::string& machine_kind() const;
  // The latest evaluation of a candidate timed on this store's machine kind (evaluation_of
  // when no kind is set).
  std::optional<Evaluation> evaluation_here(int64_t candidate) const;
  // best(limit) on the machine kind `fingerprint`.
  std::vector<std::pair<Candidate, Evaluation>> best_on(const std::string& fingerprint,
                                                        int limit) const;
  // Each machine kind with evaluations in the run and how many, most first.
  std::vector<std::pair<std::string, int64_t>> machine_kinds() const;

  // Sets the run's fact `key` (a `meta` row) to `value` unless it is set: true for the one
  // caller that set it (e.g. which worker writes the answer).
  bool set_once(const std::string& key, const std::string& value);

  // Starts a transaction that groups the following add_* calls on this thread.
  Transaction transaction();

  // Moves the write-ahead log into the database file (e.g. at a clean exit), so the run
  // is one self-contained file. Safe to call at any time.
  void checkpoint();

  // "ok", or SQLite's integrity_check and foreign_key_check findings, one per line.
  std::string integrity_check() const;

 private:
  explicit Store(std::unique_ptr<detail::Db> db);
  std::unique_ptr<detail::Db> db_;
};

}  // namespace ollie::store
