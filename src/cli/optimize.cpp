// `ollie optimize SPEC -o DIR [--time 10m] [--evals N] [--seed N] ...`,
// `ollie optimize --resume DIR/run.db` and `ollie optimize --replay RUN.db -o DIR`: the
// main job, run by the api (api::optimize); this file prints its events (a live line on a
// terminal, periodic log lines otherwise, the summary and the files written) and turns
// Ctrl-C into a clean stop; with --serve it serves the live page (src/report/) meanwhile.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>

#include "api/api.h"
#include "cli/cli.h"
#include "measure/measure.h"
#include "report/report.h"

namespace ollie::cli {
namespace {

std::atomic<int> g_interrupts{0};

void on_interrupt(int) {
  // The first Ctrl-C stops the search after the evaluation in progress; a second one
  // leaves at once (the run database is consistent either way).
  if (g_interrupts.fetch_add(1) >= 1) _exit(130);
}

std::string clock_text(double seconds) {
  const int s = static_cast<int>(seconds);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{:02}:{:02}", s / 60, s % 60);
}

std::string ms(double seconds) { return fmt::format("{:.4g} ms", seconds * 1e3); }

// The progress line of `ollie optimize`.
std::string progress_line(const api::ProgressEvent& e) {
  const search::Progress& p = e.progress;
  std::string line = fmt::format(
      "[{}] {} evals ({:.0f}/min, {} in the run), accepted {:.0f}%, best {} = {:.2f}x the "
      "baseline {}, {:.0f}% of "
      "the roofline, {} caches, T = {}",
      clock_text(p.elapsed_seconds), p.evaluations, p.evals_per_minute, p.run_evaluations,
      p.acceptance * 100, ms(p.best_seconds),
      p.best_seconds > 0 ? p.baseline_seconds / p.best_seconds : 0.0, ms(p.baseline_seconds),
      e.roofline_fraction * 100, measure::regime_name(e.cold), fmt::join(p.temperatures, ","));
  if (e.cost_model_on) line += fmt::format(", {} screened out", p.screened_out);
  if (p.given_up > 0) line += fmt::format(", {} given up as too slow", p.given_up);
  return e.llm_usage.empty() ? line : line + ", llm: " + e.llm_usage;
}

// Prints a run's events as `ollie optimize` always has: notes and progress on stderr, the
// summary and the files written on stdout.
class PrintingObserver : public api::OptimizeObserver {
 public:
  PrintingObserver(int log_every, report::LiveServer* live) : log_every_(log_every), live_(live) {}

  void note(const std::string& line) override { std::cerr << line << "\n"; }
  void started(const api::StartedEvent& e) override {
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    std::cerr << fmt::format("ollie optimize {} ({}): run database {}{}\n", e.entry, e.spec_path,
                             e.db_path, e.resumed ? " (resumed)" : "");
    std::cerr << fmt::format("timing: {}: {}\n", e.regime_text, e.regime_why);
    if (live_) {
      live_->set_database(e.db_path);
      std::cerr << fmt::format("live page: {} (while the search runs)\n", live_->url());
    }
  }
  void evaluated(const api::ProgressEvent& e) override {
    const std::string line = progress_line(e);
    if (tty_) {
      std::cerr << "\r\033[K" << line << std::flush;
    } else if (std::chrono::steady_clock::now() - last_log_ > std::chrono::seconds(log_every_)) {
      std::cerr << line << "\n";
      last_log_ = std::chrono::steady_clock::now();
    }
  }
  void stopped(search::StopReason reason) override {
    std::signal(SIGINT, SIG_DFL);
    if (tty_) std::cerr << "\n";
    std::cerr << "stopped: " << search::stop_reason_name(reason) << "\n";
  }
  void verifying(int64_t candidate) override {
    std::cerr << fmt::format("verifying candidate {} at full level ...\n", candidate);
  }
  void verified(const api::VerifiedEvent& e) override {
    if (e.verdict != verify::Verdict::Pass)
      std::cerr << fmt::format("  {}: {}\n", verify::verdict_name(e.verdict), e.message);
  }
  void finished(const api::FinishedEvent& e) override {
    if (e.left_to_another_worker) return;
    if (!e.written) {
      std::cerr << "no candidate passed the full verification; no kernel written\n";
      for (const std::string& file : e.files)
        std::cout << fmt::format("wrote {}/{}\n", e.out_dir.string(), file);
      return;
    }
    std::cerr << e.tuning_note;
    std::cout << e.summary
              << fmt::format("\nwrote {}/{{{}}}\n", e.out_dir.string(), fmt::join(e.files, ", "));
    if (e.reason == search::StopReason::Interrupted)
      std::cout << fmt::format("resume with: ollie optimize --resume {}\n", e.db_path);
  }

 private:
  int log_every_;
  report::LiveServer* live_;  // --serve; null without
  bool tty_ = isatty(STDERR_FILENO);
  std::chrono::steady_clock::time_point last_log_ =
      std::chrono::steady_clock::now() - std::chrono::hours(1);
};

}  // namespace

int run_optimize(const OptimizeFlags& f) {
  // --serve binds before the run starts: a port that is taken stops nothing half-done.
  std::optional<report::LiveServer> live;
  if (f.serve && f.storage.rfind("postgres", 0) == 0)
    throw UserError(
        "--serve shows a run database file; a run in PostgreSQL has none (`ollie "
        "export` copies it into one for `ollie serve`)");
  if (f.serve) live.emplace(report::ServeOptions{f.bind, f.port, 2});
  PrintingObserver printer(f.log_every, live ? &*live : nullptr);
  const api::FinishedEvent done = api::optimize(f, printer, [] { return g_interrupts.load() > 0; });
  if (live)
    std::cerr << fmt::format("the live page stops with the run; `ollie serve {}` shows it again\n",
                             done.db_path);
  return done.written || done.left_to_another_worker ? 0 : 4;
}

}  // namespace ollie::cli
