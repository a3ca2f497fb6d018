// `optimize` behind api::OptimizeRun, after opening (optimize.cpp): the search's chains
// with progress to the observer, then the final answer: the best candidates verified at the
// full level, fastest first, and the first that passes written with its header, schedule,
// certificate and summary.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/optimize_llm.h"
#include "api/optimize_shared.h"
#include "api/optimize_state.h"
#include "api/optimize_timing.h"
#include "api/optimize_warm.h"
#include "emit/emit.h"
#include "measure/measure.h"
#include "report/report.h"
#include "search/cost_model.h"
#include "search/search.h"
#include "store/store.h"
#include "store/tuning_db.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/strings.h"

namespace ollie::api {

namespace {

namespace fs = std::filesystem;

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
  if (p.given_up > 0) text += fmt::format(", {} given up as too slow", p.given_up);
  const search::CostModelAccuracy a = search::cost_model_accuracy(db);
  if (a.candidates >= 2 && std::isfinite(a.spearman))
    text += fmt::format(
        "; the run's predictions of {} measured candidate{} rank-correlate with their times at "
        "Spearman {:.2f}",
        a.candidates, a.candidates == 1 ? "" : "s", a.spearman);
  return text;
}

// report.html beside the run database, whatever the outcome (src/report/): a report that
// cannot be written costs a note, not the run.
void write_report_into(const std::string& db_path, const fs::path& out_dir, FinishedEvent& done,
                       OptimizeObserver& observer) {
  try {
    report::write_report(db_path, (out_dir / "report.html").string());
    done.files.push_back("report.html");
  } catch (const UserError& e) {
    observer.note(std::string("report.html not written: ") + e.what());
  }
}

}  // namespace

search::StopReason OptimizeRun::search(const std::function<bool()>& stop) {
  State& s = *state_;
  s.observer->started({s.graph.entry, s.db->run().spec_path, s.db_path, s.resuming,
                       regime_text(s.regime), s.regime.why});
  double best_seen = 0;
  auto progress = [&](const search::Progress& p) {
    s.last_progress = p;
    ProgressEvent e;
    e.progress = p;
    e.roofline_fraction = s.roof_fraction(p.best_seconds);
    e.cold = s.regime.cold;
    e.cost_model_on = s.so.cost_model.on;
    if (s.llm_proposer) e.llm_usage = usage_text(s.llm_proposer->usage());
    s.observer->evaluated(e);
    if (p.best_seconds > 0 && (best_seen == 0 || p.best_seconds < best_seen)) {
      best_seen = p.best_seconds;
      s.observer->new_best({p.best_seconds, p.baseline_seconds, p.evaluations});
    }
  };
  const search::StopReason reason = search::run_chains(
      s.graph, *s.db, s.evaluator(), s.proposers, s.so, [&stop] { return stop && stop(); },
      progress);
  s.observer->stopped(reason);
  s.db->add_event("stop", search::stop_reason_name(reason));
  if (s.heartbeat) {
    s.heartbeat.reset();
    s.db->stop_worker();
  }
  return reason;
}

FinishedEvent OptimizeRun::finalize(search::StopReason reason) {
  State& s = *state_;
  std::optional<store::Store>& db = s.db;
  const ir::Graph& graph = s.graph;
  const fs::path& out_dir = s.out_dir;
  const std::string& entry = graph.entry;
  const std::string spec_path = db->run().spec_path;
  const std::string& tuning_path = s.tuning_path;
  const std::string& symbol = s.symbol;
  const measure::Regime& regime = s.regime;
  const measure::Roofline& roof = s.roof;
  const search::EvaluatorOptions& eo = s.eo;
  const std::optional<SessionModel>& model = s.model;
  const search::LlmProposer* llm_proposer = s.llm_proposer;
  const std::optional<store::Store>& recorded = s.recorded;
  auto roof_fraction = [&s](double seconds) { return s.roof_fraction(seconds); };
  FinishedEvent done;
  done.reason = reason;
  done.out_dir = out_dir;
  done.db_path = (out_dir / "run.db").string();
  // A worker of a shared run: the last one to stop writes the answer, once.
  if (s.so.worker.on && !claim_finalize(*db, s.so.worker.lease_seconds)) {
    done.left_to_another_worker = true;
    s.observer->note(fmt::format(
        "other workers are still searching the run (or one wrote its answer): the last to stop "
        "writes it; `ollie optimize --storage URL --run {} --finalize -o DIR` writes it now",
        s.f.run_name));
    s.observer->finished(done);
    return done;
  }
  const std::string cost_model_text = cost_model_summary(*db, s.so.cost_model, s.last_progress);
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
  full.kernel_symbol = symbol;
  for (const auto& [cand, eval] : best) {
    s.observer->verifying(cand.id);
    // The kernel as written, under its --symbol: the certificate's hash is the file's.
    const std::string source = emit::with_symbol(cand.source, symbol);
    const verify::Report report = verify::verify(graph, source, s.graph_at, full);
    db->add_event("final-verify",
                  fmt::format("candidate {}: {}", cand.id, verify::verdict_name(report.verdict)));
    s.observer->verified({cand.id, report.verdict, report.message});
    if (report.verdict != verify::Verdict::Pass) continue;
    // The baseline's time on the machine kind the best was timed on.
    const double base_s =
        db->evaluation_here(db->candidate_by_hash(sha256_hex(s.baseline.source))->id)
            ->median_seconds;
    // The baseline is 1 on the chain's clock (its own side-by-side ratio is noise: 2.85 on a
    // busy machine once made the summary call it "0.35x faster" than itself).
    const bool is_baseline = cand.proposer == "baseline";
    const double ratio = is_baseline ? 1.0 : eval.ratio_vs_baseline;
    const double best_s = ratio > 0 ? base_s * ratio : eval.median_seconds;
    const std::string best_line =
        is_baseline
            ? fmt::format(
                  "- best: the baseline itself, {} (no candidate was confirmed "
                  "faster side by side)\n",
                  ms(best_s))
            : fmt::format(
                  "- best: {} ({:.2f}x faster), candidate {} from {}, measured "
                  "side by side with the baseline (ratio {:.3f})\n",
                  ms(best_s), best_s > 0 ? base_s / best_s : 0.0, cand.id, cand.proposer, ratio);
    write_text(out_dir / (entry + ".cpp"), source);
    write_text(out_dir / (entry + ".ollie.h"), emit::emit_header(graph, symbol));
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
        "- baseline (default schedule): {}\n{}"
        "{}"
        "- verified at full level: {} suites, worst error {:.3g} of its bound (certificate.json)\n"
        "- timing: {}: {}\n"
        "- roofline at {} threads, memory ceiling {}: {}-bound, no kernel faster than {}; the "
        "best is at {:.0f}% of "
        "it, the baseline "
        "at {:.0f}% ({:.3g} GFLOP/s, {:.3g} GB/s for the best)\n",
        entry, spec_path, db->run().spec_sha256, search::stop_reason_name(reason),
        counts.evaluations, counts.passes, counts.steps, counts.accepted_steps, ms(base_s),
        best_line,
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
    std::string extra = "- " + cost_model_text + "\n" + other_machine_kinds_line(*db);
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
             search::origin_of(cand, cand.proposer == "warm-start" && !db->shared()
                                         ? store::read_run_events(db->path(), "warm-start")
                                         : std::vector<std::string>()) +
             "\n";
    if (recorded) {
      extra += fmt::format("- replay of {}: the model's answers were read from it, not asked",
                           recorded->path());
      if (s.replay_evaluator)
        extra += fmt::format(
            "; {} evaluation{} reused from it for identical kernels, {} made here "
            "(--replay-evaluate evaluates all again)",
            s.replay_evaluator->reused(), s.replay_evaluator->reused() == 1 ? "" : "s",
            s.replay_evaluator->evaluated());
      else
        extra += "; every candidate evaluated again (--replay-evaluate)";
      extra += "\n";
    }
    write_text(out_dir / "summary.md", summary + extra);
    db->checkpoint();
    if (!tuning_path.empty())
      done.tuning_note = add_to_tuning_db(tuning_path, *db, graph, cand, best_s,
                                          best_s > 0 ? best_s / base_s : 0.0);
    done.written = true;
    done.files = {entry + ".cpp", entry + ".ollie.h"};
    if (!cand.schedule.empty()) done.files.push_back(entry + ".schedule");
    if (!cand.rewrites.empty()) done.files.push_back(entry + ".rewrites");
    done.files.insert(done.files.end(), {"certificate.json", "summary.md"});
    done.summary = summary + extra;
    done.best_candidate = cand.id;
    done.best_seconds = best_s;
    done.baseline_seconds = base_s;
    break;
  }
  if (db->shared())
    write_shared_report(s.f, out_dir, done, *s.observer);
  else
    write_report_into(s.db_path, out_dir, done, *s.observer);
  s.observer->finished(done);
  return done;
}

FinishedEvent optimize(const OptimizeOptions& options, OptimizeObserver& observer,
                       const std::function<bool()>& stop) {
  OptimizeRun run = OptimizeRun::open(options, observer);
  if (options.finalize_only) return run.finalize(search::StopReason::Finalize);
  const search::StopReason reason = run.search(stop);
  return run.finalize(reason);
}

}  // namespace ollie::api
