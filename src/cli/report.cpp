// `ollie report RUN.db -o report.html` (the run's page as one self-contained HTML file) and
// `ollie serve RUN.db [--bind ADDR] [--port N]` (the same page, live, until Ctrl-C); and
// the --serve flags of `ollie optimize`. The page itself is src/report/.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "cli/cli.h"
#include "report/report.h"
#include "store/run_view.h"

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

int run_report(const ReportVerbs& v) {
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
  v->report->add_option("db", v->db, "the run database (DIR/run.db)")->required();
  v->report->add_option("-o,--out", v->out, "the HTML file to write (default report.html)");
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
