// The read-only view of a run database (see run_view.h).
#include "store/run_view.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "store/sqlite.h"
#include "support/error.h"

namespace ollie::store {

namespace {

std::string what_to_do() {
  return "; give the run.db that `ollie optimize -o DIR` wrote (DIR/run.db)";
}

void check_is_sqlite_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UserError("run database '" + path + "' not found" + what_to_do());
  if (!std::filesystem::is_regular_file(path, ec))
    throw UserError("run database '" + path + "' is not a file" + what_to_do());
  char header[16] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(header, sizeof header);
  if (!in || std::string(header, sizeof header) != std::string("SQLite format 3\0", 16))
    throw UserError("'" + path + "' is not an ollie run database (not an SQLite file)" +
                    what_to_do());
}

// What makes a file an ollie run database: meta's format, one run, a schema this ollie reads.
struct Header {
  int64_t version = 0;
  std::string format;
  int64_t runs = 0;
};

void check_header(const Header& h, const std::string& path) {
  if (h.version > Store::schema_version())
    throw UserError("run database '" + path + "' was written by a newer ollie (schema version " +
                    std::to_string(h.version) + "); read it with that ollie");
  if (h.format != "ollie run database" || h.runs != 1)
    throw UserError("'" + path + "' is not an ollie run database" + what_to_do());
}

}  // namespace

struct RunView::Impl {
  std::string path;
  std::unique_ptr<sql::Connection> conn;

  // Runs `sql` and calls `row` for each result row; a failure names the file.
  template <typename Row>
  void each(const char* sql, const char* what, Row row, int64_t id = -1) const {
    sql::Statement st(*conn, sql);
    sql::Query q(st, what);
    if (id >= 0) q.int64(1, id);
    while (q.next()) row(q);
  }
};

RunView RunView::open(const std::string& path) {
  check_is_sqlite_file(path);
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  Header header;
  try {
    impl->conn = std::make_unique<sql::Connection>(path, SQLITE_OPEN_READONLY);
    sqlite3_busy_timeout(impl->conn->get(), 10000);
    header.version = impl->conn->query_int("PRAGMA user_version", "reading the header");
    header.format =
        impl->conn->query_text("SELECT value FROM meta WHERE key = 'format'", "reading meta");
    header.runs = impl->conn->query_int("SELECT count(*) FROM run", "reading the run");
  } catch (const UserError& e) {
    throw UserError("cannot read run database '" + path + "' (" + e.what() +
                    "); the file is damaged or is not an ollie run database" + what_to_do());
  }
  check_header(header, path);
  return RunView(std::move(impl));
}

RunView::RunView(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunView::RunView(RunView&&) noexcept = default;
RunView& RunView::operator=(RunView&&) noexcept = default;
RunView::~RunView() = default;

const std::string& RunView::path() const { return impl_->path; }

RunInfo RunView::run() const {
  RunInfo r;
  impl_->each(
      "SELECT spec_path, spec_source, spec_sha256, entry, dims_json, machine_json, "
      "options_json, seed, created FROM run WHERE id = 1",
      "reading the run", [&](const sql::Query& q) {
        r.spec_path = q.col_text(0);
        r.spec_source = q.col_text(1);
        r.spec_sha256 = q.col_text(2);
        r.entry = q.col_text(3);
        r.dims_json = q.col_text(4);
        r.machine_json = q.col_text(5);
        r.options_json = q.col_text(6);
        r.seed = static_cast<uint64_t>(q.col_int64(7));
        r.created = q.col_text(8);
      });
  return r;
}

namespace {

// Columns 0..6 of the candidate queries below; `source` is read only when asked for.
Candidate candidate_row(const sql::Query& q) {
  Candidate c;
  c.id = q.col_int64(0);
  c.hash = q.col_text(1);
  c.schedule = q.col_text(2);
  c.rewrites = q.col_text(3);
  c.parent = q.col_int64(4);
  c.proposer = q.col_text(5);
  c.created = q.col_text(6);
  return c;
}

// Columns 0..12 of the evaluation queries below (the certificate is column 13 when read).
Evaluation evaluation_row(const sql::Query& q) {
  Evaluation e;
  e.id = q.col_int64(0);
  e.candidate = q.col_int64(1);
  e.verdict = q.col_text(2);
  e.message = q.col_text(3);
  e.penalty = q.col_real(4);
  e.median_seconds = q.col_real(5);
  e.min_seconds = q.col_real(6);
  e.mad_seconds = q.col_real(7);
  e.ratio_vs_baseline = q.col_real(8);
  e.rounds = static_cast<int>(q.col_int64(9));
  e.cost = q.col_real(10);
  e.eval_seconds = q.col_real(11);
  e.created = q.col_text(12);
  return e;
}

constexpr const char* kCandidateSql =
    "SELECT id, hash, schedule, rewrites, parent, proposer, created, source FROM candidates";
constexpr const char* kEvaluationSql =
    "SELECT id, candidate, verdict, message, penalty, median_seconds, min_seconds, mad_seconds, "
    "ratio_vs_baseline, rounds, cost, eval_seconds, created, certificate_json FROM evaluations";

std::string sql_where(const char* base, const char* tail) { return std::string(base) + tail; }

}  // namespace

std::vector<Candidate> RunView::candidates() const {
  std::vector<Candidate> out;
  impl_->each(
      "SELECT id, hash, schedule, rewrites, parent, proposer, created FROM candidates ORDER BY id",
      "reading the candidates", [&](const sql::Query& q) { out.push_back(candidate_row(q)); });
  return out;
}

std::optional<Candidate> RunView::candidate(int64_t id) const {
  std::optional<Candidate> out;
  impl_->each(
      sql_where(kCandidateSql, " WHERE id = ?1").c_str(), "reading a candidate",
      [&](const sql::Query& q) {
        out = candidate_row(q);
        out->source = q.col_text(7);
      },
      id);
  return out;
}

std::vector<Evaluation> RunView::evaluations() const {
  std::vector<Evaluation> out;
  impl_->each(
      "SELECT id, candidate, verdict, message, penalty, median_seconds, min_seconds, "
      "mad_seconds, ratio_vs_baseline, rounds, cost, eval_seconds, created FROM evaluations "
      "ORDER BY id",
      "reading the evaluations", [&](const sql::Query& q) { out.push_back(evaluation_row(q)); });
  return out;
}

std::optional<Evaluation> RunView::evaluation(int64_t id) const {
  std::optional<Evaluation> out;
  impl_->each(
      sql_where(kEvaluationSql, " WHERE id = ?1").c_str(), "reading an evaluation",
      [&](const sql::Query& q) {
        out = evaluation_row(q);
        out->certificate_json = q.col_text(13);
      },
      id);
  return out;
}

std::vector<StepRow> RunView::steps() const {
  std::vector<StepRow> out;
  impl_->each(
      "SELECT step, chain, proposed, \"current\", accepted, temperature, cost_current, "
      "cost_proposed, note, created FROM steps ORDER BY id",
      "reading the steps", [&](const sql::Query& q) {
        StepRow r;
        r.step.step = q.col_int64(0);
        r.step.chain = static_cast<int>(q.col_int64(1));
        r.step.proposed = q.col_int64(2);
        r.step.current = q.col_int64(3);
        r.step.accepted = q.col_int64(4) != 0;
        r.step.temperature = q.col_real(5);
        r.step.cost_current = q.col_real(6);
        r.step.cost_proposed = q.col_real(7);
        r.step.note = q.col_text(8);
        r.created = q.col_text(9);
        out.push_back(std::move(r));
      });
  return out;
}

std::vector<EventRow> RunView::events() const {
  std::vector<EventRow> out;
  impl_->each("SELECT id, kind, text, created FROM events ORDER BY id", "reading the events",
              [&](const sql::Query& q) {
                out.push_back({q.col_int64(0), q.col_text(1), q.col_text(2), q.col_text(3)});
              });
  return out;
}

std::vector<ModelCall> RunView::model_calls() const {
  std::vector<ModelCall> out;
  impl_->each(
      "SELECT id, proposer, status, http_status, tokens_in, tokens_out, cost, seconds, created "
      "FROM model_calls ORDER BY id",
      "reading the model calls", [&](const sql::Query& q) {
        ModelCall m;
        m.id = q.col_int64(0);
        m.proposer = q.col_text(1);
        m.status = q.col_text(2);
        m.http_status = static_cast<int>(q.col_int64(3));
        m.tokens_in = q.col_int64(4);
        m.tokens_out = q.col_int64(5);
        m.cost = q.col_real(6);
        m.seconds = q.col_real(7);
        m.created = q.col_text(8);
        out.push_back(std::move(m));
      });
  return out;
}

RowMarks RunView::marks() const {
  RowMarks m;
  impl_->each(
      "SELECT (SELECT coalesce(max(id), 0) FROM candidates), "
      "(SELECT coalesce(max(id), 0) FROM evaluations), (SELECT coalesce(max(id), 0) FROM steps), "
      "(SELECT coalesce(max(id), 0) FROM events), (SELECT coalesce(max(id), 0) FROM model_calls)",
      "reading the row counts", [&](const sql::Query& q) {
        m = {q.col_int64(0), q.col_int64(1), q.col_int64(2), q.col_int64(3), q.col_int64(4)};
      });
  return m;
}

}  // namespace ollie::store
