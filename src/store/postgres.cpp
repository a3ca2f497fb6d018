// The PostgreSQL backend of the run database (postgres.h) over libpq: every statement is
// sent with its values as text parameters (PQexecParams), the store's SQLite-flavoured SQL
// translated on the way (`?N` -> `$N`, INTEGER -> BIGINT, REAL -> DOUBLE PRECISION,
// INTEGER PRIMARY KEY -> BIGSERIAL PRIMARY KEY). A lost connection is retried with
// backoff; the statements of a transaction it cut off are replayed on the new one.
#include "store/postgres.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "store/store.h"
#include "support/error.h"

namespace ollie::store::backend {

namespace {

using Params = std::vector<std::optional<std::string>>;
using Clock = std::chrono::steady_clock;

// `?N` placeholders as `$N`, and SQLite's type names as PostgreSQL's, outside quotes.
std::string translate(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  auto word_at = [&](size_t i, const char* w) {
    const size_t n = std::char_traits<char>::length(w);
    if (sql.compare(i, n, w) != 0) return false;
    const bool left =
        i == 0 || !(std::isalnum(static_cast<unsigned char>(sql[i - 1])) || sql[i - 1] == '_');
    const bool right = i + n >= sql.size() ||
                       !(std::isalnum(static_cast<unsigned char>(sql[i + n])) || sql[i + n] == '_');
    return left && right;
  };
  for (size_t i = 0; i < sql.size();) {
    const char c = sql[i];
    if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {  // a comment, to its line's end
      const size_t end = std::min(sql.find('\n', i), sql.size());
      out.append(sql, i, end - i);
      i = end;
    } else if (c == '\'' || c == '"') {
      const size_t end = sql.find(c, i + 1);
      const size_t stop = end == std::string::npos ? sql.size() : end + 1;
      out.append(sql, i, stop - i);
      i = stop;
    } else if (c == '?' && i + 1 < sql.size() &&
               std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      out += '$';
      ++i;
    } else if (word_at(i, "INTEGER PRIMARY KEY")) {
      out += "BIGSERIAL PRIMARY KEY";
      i += 19;
    } else if (word_at(i, "INTEGER")) {
      out += "BIGINT";
      i += 7;
    } else if (word_at(i, "REAL")) {
      out += "DOUBLE PRECISION";
      i += 4;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string sqlstate_of(const PGresult* r) {
  const char* s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  return s ? s : "";
}

// A failure of the connection rather than of the statement: retried.
bool connection_lost(PGconn* conn, const std::string& sqlstate) {
  return PQstatus(conn) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 || sqlstate == "57P01" ||
         sqlstate == "57P02" || sqlstate == "57P03";
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string format_real(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Recorded {
  std::string sql;
  Params params;
  std::vector<std::string> returned;  // the first row's values, as the caller may have read
};

}  // namespace

struct PostgresBackend::Impl {
  std::string url, run, name;
  PostgresOptions options;
  PGconn* conn = nullptr;
  bool in_transaction = false;
  bool schema_set = false;
  std::string xid;            // the open transaction's id (txid_current)
  bool snapshot = false;      // the open transaction reads one snapshot: not replayable
  std::vector<Recorded> log;  // the open transaction's statements, for a replay

  ~Impl() {
    if (conn) PQfinish(conn);
  }

  std::string message() const { return trimmed(conn ? PQerrorMessage(conn) : "no connection"); }

  // One connection attempt; false (conn closed) when the server cannot be reached.
  bool connect_once() {
    if (conn) PQfinish(conn);
    // Defaults first: values in the URL override them (expand_dbname).
    const char* keys[] = {"connect_timeout",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "application_name",
                          "dbname",
                          nullptr};
    const char* values[] = {"10", "10", "5", "3", "ollie", url.c_str(), nullptr};
    conn = PQconnectdbParams(keys, values, 1);
    if (PQstatus(conn) == CONNECTION_OK) {
      PQsetNoticeProcessor(
          conn, [](void*, const char*) {}, nullptr);
      // No JIT: every statement of a run is short, and the planner's estimate of a best()
      // on a run of 100 000 evaluations (per machine kind) crosses jit_above_cost: 0.3 ms
      // of work compiled for 700 ms (docs/distributed.md, "How far one server goes"). A
      // server without the setting (before PostgreSQL 11) refuses it: ignored.
      PQclear(PQexec(conn, "SET jit = off"));
      return true;
    }
    return false;
  }

  // Connects, retrying for the timeout when the server cannot be reached; a refusal
  // (authentication, no such database) is a UserError at once.
  void connect() {
    const auto start = Clock::now();
    double backoff = 0.2;
    for (int attempt = 1;; ++attempt) {
      if (connect_once()) {
        if (schema_set) set_search_path();
        return;
      }
      const std::string why = message();
      const bool refused = why.find("authentication") != std::string::npos ||
                           why.find("does not exist") != std::string::npos ||
                           why.find("password") != std::string::npos ||
                           why.find("invalid") != std::string::npos;
      if (refused)
        throw UserError("run database " + name + ": the server refused the connection: " + why +
                        "; check the URL given to --storage");
      const double spent = std::chrono::duration<double>(Clock::now() - start).count();
      if (spent >= options.timeout_seconds) {
        char text[160];
        std::snprintf(text, sizeof text,
                      ": the server was unreachable for %.0f s (--storage-timeout); everything "
                      "written before is kept: ",
                      spent);
        throw StorageUnavailable("run database " + name + text + why);
      }
      const double wait = std::min(backoff, options.timeout_seconds - spent);
      if (options.progress) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "storage: the database server is unreachable (attempt %d, %.0f s of "
                      "--storage-timeout %.0f s); retrying in %.1f s",
                      attempt, spent, options.timeout_seconds, wait);
        options.progress(line);
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      backoff = std::min(backoff * 2, 5.0);
    }
  }

  void set_search_path() {
    char* ident = PQescapeIdentifier(conn, run.c_str(), run.size());
    const std::string sql = std::string("SET search_path TO ") + ident;
    PQfreemem(ident);
    PGresult* r = PQexec(conn, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
      throw UserError("run database " + name + ": cannot use the run's schema: " + message());
  }

  // Sends one statement (translated SQL); retries on a lost connection. The caller owns
  // the result.
  PGresult* execute(const std::string& sql, const Params& params, const char* what) {
    while (true) {
      PGresult* r = send(sql, params);
      if (succeeded(r, what)) return r;
      reconnect_and_replay();
    }
  }

  // Whether `r` succeeded (then the caller owns it). Otherwise a lost connection clears it
  // and gives false, and any other error throws (fail).
  bool succeeded(PGresult* r, const char* what) {
    const ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return true;
    const std::string state = sqlstate_of(r);
    if (!connection_lost(conn, state)) fail(r, state, what);
    PQclear(r);
    return false;
  }

  PGresult* send(const std::string& sql, const Params& params) {
    // Fixed text without values may hold several statements (the schema): PQexec.
    if (params.empty()) return PQexec(conn, sql.c_str());
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    return PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                        nullptr, nullptr, 0);
  }

  [[noreturn]] void fail(PGresult* r, const std::string& state, const char* what) {
    const std::string msg = trimmed(r ? PQresultErrorMessage(r) : message());
    PQclear(r);
    if (state.rfind("23", 0) == 0)
      throw InternalError("run database " + name + ": " + msg + " (" + what + ")");
    throw UserError("run database " + name + ": " + msg + " (" + what + ")");
  }

  // After a lost connection: connects again and, inside a transaction, sends its
  // statements again (they were rolled back with the connection).
  void reconnect_and_replay() {
    if (options.progress)
      options.progress("storage: lost the connection to the database server (" + message() +
                       "); reconnecting");
    do {
      connect();
      if (!in_transaction) return;
    } while (!replay_log());
  }

  // BEGIN and the open transaction's statements again, on a new connection; false when
  // the connection was lost again. A transaction whose later statement used a value an
  // earlier one returned cannot be replayed (the server may return another id):
  // StorageUnavailable.
  bool replay_log() {
    if (snapshot)
      throw StorageUnavailable("run database " + name +
                               ": the connection was lost while reading a snapshot of the run; "
                               "read it again");
    std::set<std::string> returned;
    for (const Recorded& rec : log) {
      for (const auto& p : rec.params)
        if (p && returned.count(*p))
          throw StorageUnavailable("run database " + name +
                                   ": the connection was lost inside a transaction that cannot "
                                   "be replayed; the transaction was rolled back");
      returned.insert(rec.returned.begin(), rec.returned.end());
    }
    if (!start_transaction()) return false;
    for (const Recorded& rec : log) {
      PGresult* r = send(rec.sql, rec.params);
      if (!succeeded(r, "replaying a transaction after a lost connection")) return false;
      PQclear(r);
    }
    return true;
  }

  // BEGIN, and the transaction's id (a COMMIT whose answer was lost asks the server what
  // became of it). False when the connection was lost meanwhile.
  bool start_transaction() {
    for (const char* sql : {"BEGIN", "SELECT txid_current()"}) {
      PGresult* r = PQexec(conn, sql);
      if (!succeeded(r, "starting a transaction")) return false;
      if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) xid = PQgetvalue(r, 0, 0);
      PQclear(r);
    }
    return true;
  }

  // COMMIT. When its answer is lost the transaction may or may not have committed: after
  // reconnecting, txid_status says which, and one that did not is replayed and committed.
  void commit(const char* what) {
    while (true) {
      PGresult* r = PQexec(conn, "COMMIT");
      if (succeeded(r, what)) {
        PQclear(r);
        return;
      }
      if (options.progress)
        options.progress("storage: lost the connection to the database server at a commit (" +
                         message() + "); reconnecting");
      connect();
      if (committed()) return;
      while (!replay_log()) connect();
    }
  }

  // Whether the transaction `xid` committed, asked on a new connection.
  bool committed() {
    while (true) {
      const Params params = {xid};
      PGresult* r = send("SELECT txid_status($1::bigint)", params);
      if (succeeded(r, "checking a commit")) {
        const bool yes = PQntuples(r) == 1 && std::string(PQgetvalue(r, 0, 0)) == "committed";
        PQclear(r);
        return yes;
      }
      connect();
    }
  }
};

namespace {

class PostgresStatement : public Statement {
 public:
  PostgresStatement(PostgresBackend::Impl& db, std::string sql) : db_(db), sql_(std::move(sql)) {}
  ~PostgresStatement() override { PQclear(result_); }

  void bind_int64(int param, int64_t value) override { slot(param) = std::to_string(value); }
  void bind_real(int param, double value) override { slot(param) = format_real(value); }
  void bind_text(int param, const std::string& value) override { slot(param) = value; }
  void bind_null(int param) override { slot(param) = std::nullopt; }

  bool step(const char* what) override {
    if (!result_) {
      result_ = db_.execute(sql_, params_, what);
      row_ = -1;
      if (db_.in_transaction) {
        Recorded rec{sql_, params_, {}};
        if (PQntuples(result_) > 0)
          for (int c = 0; c < PQnfields(result_); ++c)
            if (!PQgetisnull(result_, 0, c)) rec.returned.push_back(PQgetvalue(result_, 0, c));
        db_.log.push_back(std::move(rec));
      }
    }
    return ++row_ < PQntuples(result_);
  }
  int64_t col_int64(int col) const override {
    return col_null(col) ? 0 : std::strtoll(PQgetvalue(result_, row_, col), nullptr, 10);
  }
  double col_real(int col) const override {
    return col_null(col) ? 0 : std::strtod(PQgetvalue(result_, row_, col), nullptr);
  }
  std::string col_text(int col) const override {
    if (col_null(col)) return "";
    return std::string(PQgetvalue(result_, row_, col),
                       static_cast<size_t>(PQgetlength(result_, row_, col)));
  }
  bool col_null(int col) const override {
    return !result_ || row_ < 0 || row_ >= PQntuples(result_) || PQgetisnull(result_, row_, col);
  }
  void reset() override {
    PQclear(result_);
    result_ = nullptr;
    params_.clear();
  }

 private:
  std::optional<std::string>& slot(int param) {
    if (params_.size() < static_cast<size_t>(param)) params_.resize(static_cast<size_t>(param));
    return params_[static_cast<size_t>(param - 1)];
  }
  PostgresBackend::Impl& db_;
  std::string sql_;
  Params params_;
  PGresult* result_ = nullptr;
  int row_ = -1;
};

}  // namespace

void check_run_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 63 && std::islower(static_cast<unsigned char>(name[0]));
  for (char c : name)
    ok = ok && (std::islower(static_cast<unsigned char>(c)) ||
                std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (!ok)
    throw UserError("--run '" + name +
                    "': name the run with 1 to 63 lowercase letters, digits, '_' and '-', "
                    "starting with a letter (e.g. --run matmul-1)");
}

std::unique_ptr<PostgresBackend> open_postgres(const std::string& url, const std::string& run,
                                               const PostgresOptions& options) {
  check_run_name(run);
  std::unique_ptr<PostgresBackend> b(new PostgresBackend());
  b->impl_ = std::make_unique<PostgresBackend::Impl>();
  PostgresBackend::Impl& impl = *b->impl_;
  impl.url = url;
  impl.run = run;
  impl.options = options;
  impl.name = b->name_ = "'" + hide_password(url) + "' (run " + run + ")";
  impl.connect();
  return b;
}

PostgresBackend::~PostgresBackend() = default;

std::unique_ptr<Statement> PostgresBackend::prepare(const std::string& sql) {
  return std::make_unique<PostgresStatement>(*impl_, translate(sql));
}

void PostgresBackend::exec(const std::string& sql, const char* what) {
  PGresult* r = impl_->execute(translate(sql), {}, what);
  if (impl_->in_transaction) impl_->log.push_back({translate(sql), {}, {}});
  PQclear(r);
}

void PostgresBackend::begin(const char* what) {
  impl_->log.clear();
  while (!impl_->start_transaction()) impl_->connect();
  impl_->in_transaction = true;
}

void PostgresBackend::begin_snapshot(const char* what) {
  // Not replayed after a lost connection: a new snapshot could differ, so the reader fails.
  PQclear(impl_->execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", {}, what));
  impl_->in_transaction = true;
  impl_->log.clear();
  impl_->snapshot = true;
}

void PostgresBackend::commit(const char* what) {
  impl_->commit(what);
  impl_->in_transaction = false;
  impl_->log.clear();
}

void PostgresBackend::rollback() noexcept {
  if (!impl_->in_transaction) return;
  impl_->in_transaction = false;
  impl_->snapshot = false;
  impl_->log.clear();
  if (PQstatus(impl_->conn) == CONNECTION_OK) PQclear(PQexec(impl_->conn, "ROLLBACK"));
}

bool PostgresBackend::run_exists() {
  auto st = prepare("SELECT 1 FROM pg_namespace WHERE nspname = ?1");
  Query q(*st, "looking for the run");
  q.text(1, impl_->run);
  return q.next();
}

bool PostgresBackend::create_run_schema() {
  char* ident = PQescapeIdentifier(impl_->conn, impl_->run.c_str(), impl_->run.size());
  const std::string sql = std::string("CREATE SCHEMA ") + ident;
  PQfreemem(ident);
  PGresult* r = impl_->send(sql, {});
  const ExecStatusType st = PQresultStatus(r);
  const std::string state = sqlstate_of(r);
  if (st == PGRES_COMMAND_OK) {
    PQclear(r);
    impl_->log.push_back({sql, {}, {}});
    return true;
  }
  // 42P06: the schema exists; 23505: another process created it at the same moment.
  if (state == "42P06" || state == "23505") {
    PQclear(r);
    rollback();
    return false;
  }
  impl_->fail(r, state, "creating the run");
}

void PostgresBackend::use_run_schema() {
  impl_->schema_set = true;
  impl_->set_search_path();
}

std::string hide_password(const std::string& url_in) {
  // password=... in the query string, then user:password@ in the authority.
  std::string url = url_in;
  for (size_t p = url.find("password="); p != std::string::npos; p = url.find("password=", p + 1)) {
    const size_t end = std::min(url.find('&', p), url.size());
    url.replace(p + 9, end - p - 9, "***");
  }
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t at = url.find('@', scheme + 3);
  const size_t slash = url.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

}  // namespace ollie::store::backend
