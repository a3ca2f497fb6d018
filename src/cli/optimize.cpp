// `ollie optimize SPEC -o DIR [--time 10m] [--evals N] [--seed N] ...`,
// `ollie optimize --resume DIR/run.db` and `ollie optimize --replay RUN.db -o DIR`: the
// main job. Runs the search's chains with the
// run database in DIR, shows progress (a live line on a terminal, periodic log lines
// otherwise), stops on a budget or Ctrl-C, then verifies the best candidates at `full`
// and writes the winner, its header, schedule, certificate and a summary into DIR.
#include <fmt/format.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "build/build.h"
#include "cli/cli.h"
#include "cli/optimize_llm.h"
#include "cli/optimize_warm.h"
#include "cli/optimize_timing.h"
#include "emit/emit.h"
#include "measure/measure.h"
#include "search/cost_model.h"
#include "search/search.h"
#include "spec/spec.h"
#include "store/store.h"
#include "store/tuning_db.h"
#include "support/sha256.h"
#include "support/strings.h"

namespace ollie::cli {
namespace {

namespace fs = std::filesystem;

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

// The spec's graph at the run's dims, from the run database (not the spec file, which
// may have changed since).
ir::Graph graph_of_run(const store::RunInfo& info) {
  spec::SpecOptions so;
  so.entry = info.entry;
  const nlohmann::json dims = nlohmann::json::parse(info.dims_json);
  for (const auto& [name, value] : dims.items()) so.dim_overrides[name] = value.get<int64_t>();
  return spec::compile_spec(info.spec_path, info.spec_source, so);
}

// "12 calls, 3.4k tokens, 0.0123 (cost)" for the progress line and the summary.
std::string usage_text(const search::LlmUsage& u) {
  std::string text =
      fmt::format("{} model call{}, {} tokens in, {} out", u.calls, u.calls == 1 ? "" : "s",
                  grouped(u.tokens_in), grouped(u.tokens_out));
  if (u.cost > 0) text += fmt::format(", cost {:.4g}", u.cost);
  return text;
}

// The cost model's line of the summary (and its event): this session's pace and what it
// screened out, and how well the run's predictions ranked the measured times.
std::string cost_model_summary(const store::Store& db, const search::CostModelOptions& o,
                               const search::Progress& p) {
  std::string text =
      fmt::format("cost model {}: this session {} evaluation{} in {} ({:.1f} per minute)",
                  o.on ? "on" : "off", p.evaluations, p.evaluations == 1 ? "" : "s",
                  clock_text(p.elapsed_seconds), p.evals_per_minute);
  if (o.on)
    text += fmt::format(", {} proposal{} screened out (up to {} asked per step)", p.screened_out,
                        p.screened_out == 1 ? "" : "s", o.candidates);
  const search::CostModelAccuracy a = search::cost_model_accuracy(db);
  if (a.candidates >= 2 && std::isfinite(a.spearman))
    text += fmt::format(
        "; the run's predictions of {} measured candidate{} rank-correlate with their times at "
        "Spearman {:.2f}",
        a.candidates, a.candidates == 1 ? "" : "s", a.spearman);
  return text;
}

}  // namespace

double parse_duration(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double scale = unit == "" || unit == "s" ? 1
                       : unit == "m"             ? 60
                       : unit == "h"             ? 3600
                       : unit == "d"             ? 86400
                                                 : -1;
  if (used == 0 || scale < 0 || !(value > 0))
    throw UserError(flag + " " + text + ": write a positive duration such as 90s, 10m, 2h or 1d");
  return value * scale;
}

// Holds an exclusive lock on <db>.lock for the life of the run, so that two `ollie
// optimize` processes never run chains on one database (each would evaluate the same
// candidates). The kernel drops the lock when the process dies, however it dies.
class RunLock {
 public:
  explicit RunLock(const std::string& db_path) {
    const std::string path = db_path + ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw UserError(
          fmt::format("cannot create the run lock '{}': {}", path, std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw UserError(fmt::format(
          "the run database '{}' is in use by another ollie optimize; wait for it to stop "
          "(or stop it with Ctrl-C), then resume",
          db_path));
    }
  }
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock() { ::close(fd_); }

 private:
  int fd_ = -1;
};

int run_optimize(const OptimizeFlags& f) {
  // The run: a new one from SPEC into DIR, the one in --resume, or a new one replaying
  // the recorded run in --replay.
  const bool resuming = !f.resume.empty();
  const bool replaying = !f.replay.empty();
  if (resuming && !f.spec.spec_path.empty())
    throw UserError("give either SPEC (a new run) or --resume RUN.db (continue one), not both");
  if (replaying && (resuming || !f.spec.spec_path.empty()))
    throw UserError(
        "--replay RUN.db starts a new run from the recorded one (its spec and options); give "
        "neither SPEC "
        "nor --resume with it");
  if (replaying && (!f.proposer_cmd.empty() || !f.llm_model.empty() || !f.llm_base_url.empty() ||
                    !f.llm_key.empty() || !f.llm_protocol.empty() || !f.llm_prompt.empty()))
    throw UserError(
        "--replay answers the model's calls from the recorded run with its settings; leave out "
        "--proposer-cmd and the --llm-* flags");
  if (f.replay_evaluate && !replaying)
    throw UserError("--replay-evaluate goes with --replay RUN.db");
  if (!f.warm_start.empty() && (resuming || replaying))
    throw UserError(
        "--warm-start starts a new run from earlier ones (give it with SPEC); a resumed run "
        "keeps the warm starts it began with, and a replay repeats its recorded run");
  // The tuning database: read by a new run, added to at the end (not by a replay, which
  // repeats its recorded run).
  const std::string tuning_path = replaying ? std::string() : tuning_db_path(f);
  search::GatheredWarmStarts warm;
  if (!resuming && !replaying && f.spec.spec_path.empty())
    throw UserError(
        "no spec: ollie optimize SPEC -o DIR starts a run; ollie optimize --resume DIR/run.db "
        "continues one");
  std::optional<store::Store> db;
  std::optional<store::Store> recorded;  // a replay's recorded run
  ir::Graph graph;
  fs::path out_dir;
  nlohmann::json options_json;
  std::optional<RunLock> lock;
  if (resuming) {
    lock.emplace(f.resume);
    db.emplace(store::Store::open(f.resume));
    const store::RunInfo info = db->run();
    graph = graph_of_run(info);
    out_dir = fs::path(f.resume).parent_path();
    options_json = nlohmann::json::parse(info.options_json);
  } else if (replaying) {
    recorded.emplace(store::Store::open(f.replay));
    store::RunInfo info = recorded->run();
    graph = graph_of_run(info);
    out_dir =
        f.out_dir.empty() ? fs::path("ollie-" + graph.entry + "-replay") : fs::path(f.out_dir);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec)
      throw UserError(
          fmt::format("-o {}: cannot create the directory: {}", out_dir.string(), ec.message()));
    if (fs::exists(out_dir / "run.db") && fs::equivalent(out_dir / "run.db", f.replay))
      throw UserError("--replay " + f.replay +
                      ": the replay needs a directory of its own; give another -o DIR");
    // The recorded run's spec, dims and options (seed, chains, proposers, threads, the
    // model's settings), and where the answers come from.
    options_json = nlohmann::json::parse(info.options_json);
    options_json["replay"] = {{"of", fs::absolute(f.replay).string()},
                              {"evaluate", f.replay_evaluate}};
    info.options_json = options_json.dump();
    info.machine_json = run_machine_json();
    info.created = strings::utc_now_iso8601();
    lock.emplace((out_dir / "run.db").string());
    db.emplace(store::Store::create((out_dir / "run.db").string(), info));
  } else {
    graph = load(f.spec);
    out_dir = f.out_dir.empty() ? fs::path("ollie-" + graph.entry) : fs::path(f.out_dir);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec)
      throw UserError(
          fmt::format("-o {}: cannot create the directory: {}", out_dir.string(), ec.message()));
    store::RunInfo info;
    info.spec_path = f.spec.spec_path;
    info.spec_source = read_text(f.spec.spec_path, "spec");
    info.spec_sha256 = sha256_hex(info.spec_source);
    info.entry = graph.entry;
    nlohmann::json dims = nlohmann::json::object();
    for (const auto& d : graph.dims) dims[d] = graph.bound_dims.at(d);
    info.dims_json = dims.dump();
    info.machine_json = run_machine_json();
    std::string proposers = f.proposers;
    const nlohmann::json llm_options = llm_options_for_new_run(f, proposers);  // never the key
    options_json = {{"seed", f.seed},
                    {"chains", f.chains},
                    {"proposers", proposers},
                    {"threads", f.threads},
                    {"bench_seconds", f.bench_seconds},
                    {"accept_weak", f.accept_weak}};
    if (!llm_options.is_null()) options_json["llm"] = llm_options;
    options_json["cost_model"] = f.cost_model.empty() ? "off" : f.cost_model;
    options_json["timing"] = regime_json(regime_for_new_run(f, graph, f.threads));
    info.options_json = options_json.dump();
    info.seed = f.seed;
    info.created = strings::utc_now_iso8601();
    // Before the run database exists: a file that cannot be read stops here.
    warm = gather_for_new_run(f, tuning_path, graph, info.spec_sha256, graph_of_run);
    lock.emplace((out_dir / "run.db").string());
    db.emplace(store::Store::create((out_dir / "run.db").string(), info));
  }
  check_reference_fits(graph);
  const measure::Regime regime = regime_of_run(options_json, f);

  // What this session runs with: the run's own options (a resumed run keeps its seed,
  // chains and proposers), and this session's budgets.
  search::SearchOptions so;
  so.seed = options_json.value("seed", uint64_t{1});
  so.chains = options_json.value("chains", 2);
  so.proposer_weights = parse_proposers(
      options_json.value("proposers", std::string("mutate")));  // runs made before rewrite existed
  // The cost model as the run was started (runs made before it existed had none).
  const std::string cost_model = options_json.value("cost_model", std::string("off"));
  if (!f.cost_model.empty() && f.cost_model != cost_model)
    throw UserError(fmt::format(
        "--cost-model {}: this run was made with the cost model {}, and keeps it so that its "
        "steps stay comparable; leave out --cost-model, or start a new run",
        f.cost_model, cost_model));
  so.cost_model.on = cost_model == "on";
  so.time_budget_seconds = f.time.empty() ? 0 : parse_duration(f.time, "--time");
  so.max_evals = f.evals;
  // A resumed replay reopens the run it replays.
  const nlohmann::json replay_of = options_json.value("replay", nlohmann::json());
  if (resuming && replay_of.is_object())
    recorded.emplace(store::Store::open(replay_of.value("of", std::string())));
  // A replay stops where the recorded run stopped, unless told otherwise (the budget
  // counts candidates: a confirmed new best has two evaluation rows).
  if (replaying && so.max_evals == 0) so.max_evals = recorded->counts().candidates;
  if (so.time_budget_seconds == 0 && so.max_evals == 0)
    throw UserError("no budget: give --time (e.g. --time 10m) or --evals N, or both");

  const std::string spec_path = db->run().spec_path;
  const std::string entry = graph.entry;
  const ir::DimBindings bound = graph.bound_dims;
  const std::string spec_source = db->run().spec_source;
  const verify::GraphAt graph_at = [spec_path, entry, spec_source](const ir::DimBindings& dims) {
    spec::SpecOptions o;
    o.entry = entry;
    o.dim_overrides = dims;
    return spec::compile_spec(spec_path, spec_source, o);
  };
  search::EvaluatorOptions eo;
  eo.threads = options_json.value("threads", 0);
  eo.bench_seconds = options_json.value("bench_seconds", 0.3);
  eo.verify.accept_weak = options_json.value("accept_weak", false);
  eo.cold = regime.cold;
  const search::Candidate baseline = search::baseline_candidate(graph);
  auto local_evaluator = search::make_local_evaluator(graph, graph_at, baseline.source, eo);
  // A replay reuses the recorded run's evaluations of identical kernels (unless
  // --replay-evaluate), so the same seed takes the same steps.
  std::optional<search::ReplayEvaluator> replay_evaluator;
  if (recorded && !replay_of.value("evaluate", false))
    replay_evaluator.emplace(*recorded, *local_evaluator);
  search::Evaluator& evaluator =
      replay_evaluator ? static_cast<search::Evaluator&>(*replay_evaluator) : *local_evaluator;

  // The roofline at the kernels' thread count (the machine is calibrated once, cached).
  measure::CalibrateOptions calibrate;
  calibrate.progress = [](const std::string& line) { std::cerr << "calibrate: " << line << "\n"; };
  const measure::CachedPeaks peaks =
      measure::machine_peaks(measure::default_cache_dir(), false, calibrate);
  const int threads = eo.threads > 0
                          ? eo.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const measure::Roofline roof = measure::roofline(graph, peaks.peaks, threads, regime.cold);
  auto roof_fraction = [&](double seconds) {
    return seconds > 0 ? roof.bound_seconds / seconds : 0.0;
  };

  std::optional<SessionModel> model;  // the llm proposer's
  search::LlmProposer* llm_proposer = nullptr;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  for (const auto& [name, weight] : so.proposer_weights) {
    if (name == "mutate")
      proposers.push_back(search::make_mutate_proposer(graph));
    else if (name == "rewrite")
      proposers.push_back(search::make_rewrite_proposer(graph));
    else if (name == "llm" && !model) {
      const nlohmann::json stored = options_json.value("llm", nlohmann::json());
      model.emplace(recorded ? make_replay_model(stored, recorded->path(), *recorded, *db)
                             : make_session_model(stored, f, *db));
      search::LlmProposerOptions lo;
      lo.spec_source = db->run().spec_source;
      lo.header = emit::emit_header(graph);
      lo.hardware = search::describe_hardware(peaks.peaks, threads);
      lo.roofline_seconds = roof.bound_seconds;
      lo.prompt = model->prompt;
      lo.stopped = model->stopped;
      lo.graph = &graph;  // answers may be schedules (docs/llm.md)
      auto p = std::make_unique<search::LlmProposer>(*model->model, *db, std::move(lo));
      llm_proposer = p.get();
      proposers.push_back(std::move(p));
      std::cerr << "llm proposer: " << model->describe << "\n";
    }
  }
  if (recorded)
    db->add_event(
        "replay",
        fmt::format("replaying {}: {}", recorded->path(),
                    replay_evaluator ? "evaluations of identical kernels reused from it"
                                     : "every candidate evaluated again (--replay-evaluate)"));

  for (const std::string& note : warm.notes) {
    std::cerr << note << "\n";
    db->add_event("warm-start", note);
  }
  so.warm_starts = warm.starts;
  so.on_warm_start = [](const std::string& line) { std::cerr << line << "\n"; };

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const bool tty = isatty(STDERR_FILENO);
  auto last_log = std::chrono::steady_clock::now() - std::chrono::hours(1);
  std::cerr << fmt::format("ollie optimize {} ({}): run database {}{}\n", entry, spec_path,
                           resuming ? f.resume : (out_dir / "run.db").string(),
                           resuming ? " (resumed)" : "");
  search::Progress last_progress;
  std::cerr << fmt::format("timing: {}: {}\n", regime_text(regime), regime.why);
  auto progress = [&](const search::Progress& p) {
    last_progress = p;
    std::string line = fmt::format(
        "[{}] {} evals ({:.0f}/min, {} in the run), accepted {:.0f}%, best {} = {:.2f}x the "
        "baseline {}, {:.0f}% of "
        "the roofline, {} caches, T = {}",
        clock_text(p.elapsed_seconds), p.evaluations, p.evals_per_minute, p.run_evaluations,
        p.acceptance * 100, ms(p.best_seconds),
        p.best_seconds > 0 ? p.baseline_seconds / p.best_seconds : 0.0, ms(p.baseline_seconds),
        roof_fraction(p.best_seconds) * 100, measure::regime_name(regime.cold),
        fmt::join(p.temperatures, ","));
    if (so.cost_model.on) line += fmt::format(", {} screened out", p.screened_out);
    const std::string with_llm =
        llm_proposer ? line + ", llm: " + usage_text(llm_proposer->usage()) : line;
    if (tty) {
      std::cerr << "\r\033[K" << with_llm << std::flush;
    } else if (std::chrono::steady_clock::now() - last_log > std::chrono::seconds(f.log_every)) {
      std::cerr << with_llm << "\n";
      last_log = std::chrono::steady_clock::now();
    }
  };
  const search::StopReason reason = search::run_chains(
      graph, *db, evaluator, proposers, so, [] { return g_interrupts.load() > 0; }, progress);
  std::signal(SIGINT, SIG_DFL);
  if (tty) std::cerr << "\n";
  std::cerr << "stopped: " << search::stop_reason_name(reason) << "\n";
  db->add_event("stop", search::stop_reason_name(reason));
  const std::string cost_model_text = cost_model_summary(*db, so.cost_model, last_progress);
  db->add_event("cost-model", cost_model_text);

  // The final answer: the fastest candidate that also passes `full`.
  const auto counts = db->counts();
  // The store orders by each candidate's own median; the chain's clock is the ratio to
  // the baseline measured side by side (less noisy), so the final order follows it.
  // The baseline is exactly 1 on that clock (its own side-by-side ratio is noise around 1:
  // a baseline measured at 1.001 once lost to a candidate at 1.000 the search never
  // confirmed as faster). A new best's latest evaluation is its confirmation against the
  // best before it, so these ratios are the search's own.
  auto best = db->best(200);
  const auto ratio_of = [](const auto& found) {
    if (found.first.proposer == "baseline") return 1.0;
    return found.second.ratio_vs_baseline > 0 ? found.second.ratio_vs_baseline : 1e300;
  };
  std::stable_sort(best.begin(), best.end(),
                   [&](const auto& a, const auto& b) { return ratio_of(a) < ratio_of(b); });
  if (best.size() > 5) best.resize(5);
  verify::Options full;
  full.level = verify::Level::Full;
  full.threads = eo.threads;
  full.accept_weak = eo.verify.accept_weak;
  for (const auto& [cand, eval] : best) {
    std::cerr << fmt::format("verifying candidate {} at full level ...\n", cand.id);
    const verify::Report report = verify::verify(graph, cand.source, graph_at, full);
    db->add_event("final-verify",
                  fmt::format("candidate {}: {}", cand.id, verify::verdict_name(report.verdict)));
    if (report.verdict != verify::Verdict::Pass) {
      std::cerr << fmt::format("  {}: {}\n", verify::verdict_name(report.verdict), report.message);
      continue;
    }
    const double base_s =
        db->evaluation_of(db->candidate_by_hash(sha256_hex(baseline.source))->id)->median_seconds;
    const double best_s =
        eval.ratio_vs_baseline > 0 ? base_s * eval.ratio_vs_baseline : eval.median_seconds;
    write_text(out_dir / (entry + ".cpp"), cand.source);
    write_text(out_dir / (entry + ".ollie.h"), emit::emit_header(graph));
    // A free-form kernel (the llm's) has no schedule: drop a stale one from an earlier run
    // into the same directory.
    std::error_code ignored;
    if (!cand.schedule.empty())
      write_text(out_dir / (entry + ".schedule"), cand.schedule);
    else
      fs::remove(out_dir / (entry + ".schedule"), ignored);
    // The schedule names the stages of the rewritten graph: keep the chain beside it (and
    // drop a stale one from an earlier run into the same directory).
    if (!cand.rewrites.empty())
      write_text(out_dir / (entry + ".rewrites"), cand.rewrites);
    else
      fs::remove(out_dir / (entry + ".rewrites"), ignored);
    write_text(out_dir / "certificate.json",
               verify::certificate_json(graph, db->run().spec_sha256, report, full));
    const std::string summary = fmt::format(
        "# ollie optimize: {}\n\n"
        "- spec: {} (sha256 {})\n- stopped: {}\n- evaluations: {} ({} passed), steps: {} ({} "
        "accepted)\n"
        "- baseline (default schedule): {}\n- best: {} ({:.2f}x faster), candidate {} from {}, "
        "measured side by side with the baseline (ratio {:.3f})\n"
        "{}"
        "- verified at full level: {} suites, worst error {:.3g} of its bound (certificate.json)\n"
        "- timing: {}: {}\n"
        "- roofline at {} threads, memory ceiling {}: {}-bound, no kernel faster than {}; the "
        "best is at {:.0f}% of "
        "it, the baseline "
        "at {:.0f}% ({:.3g} GFLOP/s, {:.3g} GB/s for the best)\n",
        entry, spec_path, db->run().spec_sha256, search::stop_reason_name(reason),
        counts.evaluations, counts.passes, counts.steps, counts.accepted_steps, ms(base_s),
        ms(best_s), best_s > 0 ? base_s / best_s : 0.0, cand.id, cand.proposer,
        eval.ratio_vs_baseline,
        cand.rewrites.empty()
            ? std::string()
            : fmt::format("- tensor-IR rewrites ({}.rewrites, docs/rewrites.md): {}\n", entry,
                          fmt::join(strings::nonempty_lines(cand.rewrites), "; ")),
        report.suites.size(), report.worst, regime_text(regime), regime.why, roof.threads,
        roof.ceiling, roof.memory_bound ? "memory" : "compute", ms(roof.bound_seconds),
        roof_fraction(best_s) * 100, roof_fraction(base_s) * 100,
        measure::throughput(roof, best_s).gflops_per_s,
        measure::throughput(roof, best_s).gbytes_per_s);
    // The language model's part (never the key: the usage and settings only), and a
    // replay's sources.
    std::string extra = "- " + cost_model_text + "\n";
    if (llm_proposer || db->counts().model_calls > 0) {
      const search::LlmUsage u = search::llm_usage_of(*db);
      extra += fmt::format("- language model (llm proposer{}): {} in the run",
                           model ? ", " + model->describe : "", usage_text(u));
      if (llm_proposer) {
        const search::LlmUsage session = llm_proposer->usage();
        extra += fmt::format(
            "; this session {} answer{} with new code, {} repeating a kernel, {} without code, {} "
            "failed call{}",
            session.with_code, session.with_code == 1 ? "" : "s", session.repeated,
            session.without_code, session.failed, session.failed == 1 ? "" : "s");
        if (session.stopped) extra += fmt::format("; stopped: {}", session.stop_reason);
      }
      extra += "\n" + llm_plan_summary(*db, llm_proposer, cand.id, entry);
    }
    extra += "- origin of the best: " +
             search::origin_of(cand, cand.proposer == "warm-start"
                                         ? store::read_run_events(db->path(), "warm-start")
                                         : std::vector<std::string>()) +
             "\n";
    if (recorded) {
      extra += fmt::format("- replay of {}: the model's answers were read from it, not asked",
                           recorded->path());
      if (replay_evaluator)
        extra += fmt::format(
            "; {} evaluation{} reused from it for identical kernels, {} made here "
            "(--replay-evaluate evaluates all again)",
            replay_evaluator->reused(), replay_evaluator->reused() == 1 ? "" : "s",
            replay_evaluator->evaluated());
      else
        extra += "; every candidate evaluated again (--replay-evaluate)";
      extra += "\n";
    }
    write_text(out_dir / "summary.md", summary + extra);
    db->checkpoint();
    if (!tuning_path.empty())
      std::cerr << add_to_tuning_db(tuning_path, *db, graph, cand, best_s,
                                    best_s > 0 ? best_s / base_s : 0.0);
    std::cout << summary << extra
              << fmt::format(
                     "\nwrote {}/{{{}.cpp, {}.ollie.h, {}{}certificate.json, summary.md}}\n",
                     out_dir.string(), entry, entry,
                     cand.schedule.empty() ? "" : entry + ".schedule, ",
                     cand.rewrites.empty() ? "" : entry + ".rewrites, ");
    if (reason == search::StopReason::Interrupted)
      std::cout << fmt::format("resume with: ollie optimize --resume {}\n",
                               (out_dir / "run.db").string());
    return 0;
  }
  std::cerr << "no candidate passed the full verification; nothing written\n";
  return 4;
}

}  // namespace ollie::cli
