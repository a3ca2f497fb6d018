// `ollie report RUN.db -o report.html` (the run's page as one self-contained HTML file) and
// `ollie serve RUN.db [--bind ADDR] [--port N]` (the same page, live, until Ctrl-C); and
// the --serve flags of `ollie optimize`. The page itself is src/report/.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/cli.h"
#include "report/report.h"
#include "store/run_view.h"
#include "store/store.h"
#include "support/error.h"

namespace ollie::cli {

namespace {

std::atomic<bool> g_stop{false};

void on_stop_signal(int) { g_stop = true; }

void add_bind_flags(CLI::App* cmd, std::string& bind, int& port) {
  cmd->add_option("--bind", bind,
                  "the address to serve on (default 127.0.0.1: this machine only; 0.0.0.0 "
                  "shows the run to the whole network)");
  cmd->add_option("--port", port, "the port (default 8765; 0: any free port)")
      ->check(CLI::Range(0, 65535));
}

// A run in a PostgreSQL database: copied into a temporary run database file (as `ollie
// export` does), the report written from it, the copy removed.
void write_shared_report(const ReportVerbs& v) {
  namespace fs = std::filesystem;
  const store::Location shared = store::Location::parse(v.storage, v.run_name);
  if (!shared.postgres())
    throw UserError("--storage " + v.storage +
                    ": ollie report takes a run database file as its argument; --storage "
                    "names a PostgreSQL database (postgresql://...) with --run NAME");
  std::string dir = (fs::temp_directory_path() / "ollie-report.XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw UserError("ollie report: cannot create a temporary directory");
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } remove{dir};
  const std::string copy = dir + "/run.db";
  store::Store::copy(shared, store::Location::parse("sqlite:" + copy, ""));
  report::write_report(copy, v.out);
}

int run_report(const ReportVerbs& v) {
  if (!v.storage.empty()) {
    if (!v.db.empty())
      throw UserError(
          "ollie report: give a run database file or --storage URL --run NAME, not both");
    write_shared_report(v);
    std::cout << fmt::format("wrote {} (run {})\n", v.out, v.run_name);
    return 0;
  }
  if (v.db.empty())
    throw UserError(
        "ollie report: give the run database (DIR/run.db), or --storage URL --run NAME for a "
        "run in PostgreSQL");
  report::write_report(v.db, v.out);
  std::cout << fmt::format("wrote {} (the run in {})\n", v.out, v.db);
  return 0;
}

int run_serve(const ReportVerbs& v) {
  store::RunView::open(v.db);  // a clear error before the port is taken
  report::LiveServer server(report::ServeOptions{v.bind, v.port, 2});
  server.set_database(v.db);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::cout << fmt::format("serving {} at {} (read-only; Ctrl-C stops)", v.db, server.url())
            << std::endl;
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::cerr << "stopped serving\n";
  return 0;
}

}  // namespace

bool ReportVerbs::given() const { return *report || *serve; }

std::unique_ptr<ReportVerbs> add_report_verbs(CLI::App& app) {
  auto v = std::make_unique<ReportVerbs>();
  v->report = app.add_subcommand(
      "report",
      "write a run's report: one self-contained HTML page (charts, the best kernel and "
      "its diff to the baseline, the certificate, the model calls)");
  v->report->add_option("db", v->db, "the run database (DIR/run.db)");
  v->report->add_option("-o,--out", v->out, "the HTML file to write (default report.html)");
  v->report->add_option("--storage", v->storage,
                        "instead of a file: the PostgreSQL database of a shared run "
                        "(postgresql://USER@HOST/DB), with --run");
  v->report->add_option("--run", v->run_name, "the shared run's name");
  v->serve = app.add_subcommand(
      "serve",
      "serve a run's report as a live page (read-only, refreshed as the run goes) "
      "until Ctrl-C");
  v->serve->add_option("db", v->db, "the run database (DIR/run.db)")->required();
  add_bind_flags(v->serve, v->bind, v->port);
  return v;
}

int ReportVerbs::run() const {
  if (*report) return run_report(*this);
  return run_serve(*this);
}

void add_serve_flags(CLI::App* optimize, OptimizeFlags& f) {
  optimize->add_flag("--serve", f.serve,
                     "serve the run's live page while the search runs (like `ollie serve`; "
                     "--bind and --port as there)");
  add_bind_flags(optimize, f.bind, f.port);
}

}  // namespace ollie::cli
