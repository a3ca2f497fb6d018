// The run report (stage "report"): one self-contained HTML page built from a run database
// (src/store/, read-only through store/run_view.h) — the best time over wall-clock time and
// over evaluations per chain with every candidate as a point, the roofline chart, the best
// kernel's lineage, rewrite chain and schedule, a side-by-side diff of the baseline and the
// best, the certificate's suites, the model calls and the events — and the live page server
// of `ollie serve` and `ollie optimize --serve`. The page needs no network: inline CSS and
// SVG, and in its live form one inline script that polls state.json. Every string from the
// database is escaped (a kernel's source is untrusted), and a Content-Security-Policy lets
// the static page run no script at all. docs/report.md describes the page and the server.
#pragma once

#include <memory>
#include <string>

namespace ollie::report {

struct PageOptions {
  // The live form: the page polls state.json every poll_seconds and, when the run has new
  // rows, replaces its content with the page as served now.
  bool live = false;
  double poll_seconds = 2;
};

// The page for the run database at `db_path`; UserError naming the file when it is
// missing, not a run database, damaged, or from a newer ollie.
std::string report_html(const std::string& db_path, const PageOptions& options = {});
// Writes the (static) page to `out_path`; UserError naming the file that failed.
void write_report(const std::string& db_path, const std::string& out_path);
// What the live page polls: {"version": "...", "candidates": N, "evaluations": N, "steps": N,
// "events": N, "model_calls": N}; the version changes whenever a row is added.
std::string state_json(const std::string& db_path);

struct ServeOptions {
  std::string bind = "127.0.0.1";
  int port = 8765;
  double poll_seconds = 2;
};

// Serves the live page of one run database over HTTP, read-only: GET / (the live page),
// /report.html (the static page), /state.json; anything else is 404, and only GET is
// answered. The constructor binds the port (UserError naming the address and port when it
// is taken or cannot be bound) and starts answering on a thread of its own, so a caller
// can bind before the database exists and name it later.
class LiveServer {
 public:
  explicit LiveServer(const ServeOptions& options);
  ~LiveServer();  // stops
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  // The run database to serve; until it is set, pages answer 503 "the run is starting".
  void set_database(const std::string& db_path);
  // Stops answering and joins the thread (idempotent).
  void stop();
  // "http://127.0.0.1:8765/"
  std::string url() const;
  int port() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ollie::report
