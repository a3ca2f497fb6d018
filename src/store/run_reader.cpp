// Reading an earlier run database read-only, for warm starts (see tuning_db.h).
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "store/sqlite.h"
#include "store/tuning_db.h"
#include "support/error.h"

namespace ollie::store {

namespace {

std::string what_to_do(const std::string& path) {
  return "; give a run.db that `ollie optimize -o DIR` wrote, or leave '" + path +
         "' out of --warm-start";
}

// The file opened read-only, after the checks Store::open makes (an SQLite file that an
// ollie wrote, with a schema this ollie reads).
std::unique_ptr<sql::Connection> open_read_only(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UserError("--warm-start: run database '" + path + "' not found" + what_to_do(path));
  if (!std::filesystem::is_regular_file(path, ec))
    throw UserError("--warm-start: '" + path + "' is not a file" + what_to_do(path));
  {
    char header[16] = {};
    std::ifstream in(path, std::ios::binary);
    in.read(header, sizeof header);
    if (!in || std::string(header, sizeof header) != std::string("SQLite format 3\0", 16))
      throw UserError("--warm-start: '" + path +
                      "' is not an ollie run database (not an SQLite file)" + what_to_do(path));
  }
  std::unique_ptr<sql::Connection> conn;
  try {
    conn = std::make_unique<sql::Connection>(path, SQLITE_OPEN_READONLY);
    sqlite3_busy_timeout(conn->get(), 10000);
    const int64_t version = conn->query_int("PRAGMA user_version", "reading the header");
    if (version > Store::schema_version())
      throw UserError("--warm-start: run database '" + path +
                      "' was written by a newer ollie (schema version " + std::to_string(version) +
                      "); use that ollie, or leave the file out of --warm-start");
    if (conn->query_text("SELECT value FROM meta WHERE key = 'format'", "reading meta") !=
            "ollie run database" ||
        conn->query_int("SELECT count(*) FROM run", "reading the run") != 1)
      throw UserError("--warm-start: '" + path + "' is not an ollie run database" +
                      what_to_do(path));
  } catch (const UserError& e) {
    const std::string text = e.what();
    if (text.rfind("--warm-start", 0) == 0) throw;
    throw UserError("--warm-start: cannot read '" + path + "' (" + text +
                    "); the file is damaged or is not an ollie run database" + what_to_do(path));
  }
  return conn;
}

}  // namespace

RunKernels read_run_kernels(const std::string& path, int limit) {
  auto conn = open_read_only(path);
  RunKernels out;
  try {
    sql::Statement run(*conn,
                       "SELECT spec_path, spec_source, spec_sha256, entry, dims_json, "
                       "machine_json, options_json, created FROM run WHERE id = 1");
    {
      sql::Query q(run, "reading the run");
      if (!q.next()) throw UserError("run database '" + path + "' has no run record");
      out.run.spec_path = q.col_text(0);
      out.run.spec_source = q.col_text(1);
      out.run.spec_sha256 = q.col_text(2);
      out.run.entry = q.col_text(3);
      out.run.dims_json = q.col_text(4);
      out.run.machine_json = q.col_text(5);
      out.run.options_json = q.col_text(6);
      out.run.created = q.col_text(7);
    }
    // The latest evaluation of each candidate decides (a confirmation may have turned a
    // first pass into a failure); the side-by-side ratio orders them.
    sql::Statement best(
        *conn,
        "SELECT c.id, c.source, c.schedule, c.rewrites, c.proposer, e.median_seconds, "
        "e.ratio_vs_baseline FROM candidates c JOIN evaluations e ON e.id = "
        "(SELECT max(id) FROM evaluations WHERE candidate = c.id) "
        "WHERE e.verdict = 'pass' AND e.median_seconds > 0 AND c.proposer != 'baseline' "
        "ORDER BY CASE WHEN e.ratio_vs_baseline > 0 THEN e.ratio_vs_baseline ELSE 1e300 END, "
        "e.median_seconds, c.id LIMIT ?1");
    sql::Query q(best, "reading the best candidates");
    q.int64(1, limit);
    while (q.next()) {
      StoredKernel k;
      k.id = q.col_int64(0);
      k.origin = path + " #" + std::to_string(k.id);
      k.source = q.col_text(1);
      k.schedule = q.col_text(2);
      k.rewrites = q.col_text(3);
      k.proposer = q.col_text(4);
      k.seconds = q.col_real(5);
      k.ratio_vs_baseline = q.col_real(6);
      k.spec_sha256 = out.run.spec_sha256;
      k.entry = out.run.entry;
      k.dims_json = out.run.dims_json;
      k.machine = out.run.machine_json;
      out.best.push_back(std::move(k));
    }
  } catch (const UserError& e) {
    throw UserError("--warm-start: cannot read '" + path + "' (" + e.what() +
                    "); the file is damaged or is not an ollie run database" + what_to_do(path));
  }
  return out;
}

std::vector<std::string> read_run_events(const std::string& path, const std::string& kind) {
  auto conn = open_read_only(path);
  sql::Statement st(*conn, "SELECT text FROM events WHERE kind = ?1 ORDER BY id");
  sql::Query q(st, "reading events");
  q.text(1, kind);
  std::vector<std::string> texts;
  while (q.next()) texts.push_back(q.col_text(0));
  return texts;
}

}  // namespace ollie::store
