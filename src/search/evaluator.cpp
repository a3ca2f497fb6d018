// The local evaluator: a quick probe of a candidate's speed against the baseline when the
// chain may give up on it, the verifier's quick suites, then a side-by-side timing against
// the baseline kernel in one runner session (docs/design.md section 9: an evaluation is a pure
// unit of work; this one runs on this machine).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "measure/measure.h"
#include "search/search.h"

namespace ollie::search {

namespace {

class LocalEvaluator : public Evaluator {
 public:
  LocalEvaluator(const ir::Graph& graph, verify::GraphAt graph_at, std::string baseline,
                 EvaluatorOptions options)
      : graph_(graph),
        graph_at_(std::move(graph_at)),
        baseline_(std::move(baseline)),
        options_(std::move(options)) {}

  Evaluation evaluate(const Candidate& candidate) override {
    return evaluate_paced(candidate, GiveUp{});
  }

  Evaluation evaluate_paced(const Candidate& candidate, const GiveUp& give_up) override {
    const auto start = std::chrono::steady_clock::now();
    if (give_up.ratio > 0) {
      const measure::BenchReport probe =
          side_by_side({"candidate", candidate.source}, {"baseline", baseline_}, probe_of(give_up));
      if (probe.status == measure::BenchStatus::Abandoned) return too_slow(probe, give_up, start);
      // Anything else (a crash, a compile error, ...): the verifier says what it is.
    }
    Evaluation e;
    verify::Options vo = options_.verify;
    vo.level = verify::Level::Quick;
    vo.seed = 0;  // fresh every time
    vo.threads = options_.threads;
    vo.runner_path = options_.runner_path;
    vo.cache_dir = options_.cache_dir;
    const verify::Report report = verify::verify(graph_, candidate.source, graph_at_, vo);
    e.verdict = report.verdict;
    e.message = report.message;
    e.penalty = report.penalty;
    e.certificate_json = verify::certificate_json(graph_, "", report, vo);
    if (report.verdict == verify::Verdict::Pass) {
      // Verified: timed in full (never given up on now), its rounds bounded by time.
      measure::BenchOptions timing = timing_options();
      timing.budget_seconds = options_.bench_seconds;
      timing.min_rounds = 5;
      timing.cap_seconds = options_.timing_cap * options_.bench_seconds;
      const measure::BenchReport bench =
          side_by_side({"candidate", candidate.source}, {"baseline", baseline_}, timing);
      if (bench.status != measure::BenchStatus::Ok) {
        // Right when verified, wrong or crashing when timed: as wrong as any.
        e.verdict = verdict_of(bench.status);
        e.message = "while timed: " + bench.message;
        e.penalty = 1;
      } else {
        e.median_seconds = bench.kernels[0].stats.median;
        e.min_seconds = bench.kernels[0].stats.min;
        e.mad_seconds = bench.kernels[0].stats.mad;
        e.ratio_vs_baseline = bench.ratio ? bench.ratio->median : 0;
        e.rounds = bench.rounds;
        e.message += busy_note(bench);
      }
    }
    e.eval_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
  }

  std::optional<Comparison> compare(const Candidate& a, const Candidate& b) override {
    const auto start = std::chrono::steady_clock::now();
    Comparison c;
    measure::BenchReport bench;
    measure::BenchOptions confirm = timing_options();
    confirm.budget_seconds = options_.confirm_seconds;
    confirm.min_rounds = std::max(5, options_.confirm_min_rounds);
    for (c.attempts = 1;; ++c.attempts) {
      bench = side_by_side({"candidate", a.source}, {"best", b.source}, confirm);
      c.contended = bench.status == measure::BenchStatus::Ok && measure::contended(bench);
      if (!c.contended || c.attempts >= std::max(1, options_.confirm_attempts)) break;
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the other work may be done by then
    }
    if (bench.status != measure::BenchStatus::Ok) {
      c.verdict = verdict_of(bench.status);
      c.message = bench.message;
    } else {
      const measure::Stats& s = bench.kernels[0].stats;
      c.median_seconds = s.median;
      c.min_seconds = s.min;
      c.mad_seconds = s.mad;
      c.ratio = bench.ratio ? bench.ratio->median : 0;
      c.min_ratio = bench.kernels[1].stats.min > 0 ? s.min / bench.kernels[1].stats.min : 0;
      c.rounds = bench.rounds;
      c.message = "ok" + busy_note(bench);
    }
    c.others_cpus = bench.others_cpus;
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return c;
  }

 private:
  // The run's timing options (threads, regime, runner, compiler), budgets unset.
  measure::BenchOptions timing_options() const {
    measure::BenchOptions bo;
    bo.threads = options_.threads;
    bo.cold = options_.cold;
    bo.runner_path = options_.runner_path;
    bo.cache_dir = options_.cache_dir;
    bo.compiler = options_.verify.compiler;
    return bo;
  }

  // The speed probe before verification: two warm-up rounds (A B, B A) and one timed
  // round, no output checks (its times can only reject), given up on by the runner when
  // the candidate's fastest call is more than give_up.ratio times the baseline's, or when
  // one call runs longer than kCallLimit times the ratio's time plus 0.1 s (room for the
  // noise of a busy machine and a first call's page faults and thread start).
  static constexpr double kCallLimit = 10;
  measure::BenchOptions probe_of(const GiveUp& give_up) const {
    measure::BenchOptions bo = timing_options();
    bo.warmup_rounds = 2;
    bo.min_rounds = bo.max_rounds = 1;
    bo.budget_seconds = 0;
    bo.check_outputs = false;
    bo.abandon_ratio = give_up.ratio;
    if (give_up.baseline_seconds > 0)
      bo.call_limit_seconds = call_limit(give_up) * give_up.baseline_seconds;
    return bo;
  }
  // The call limit as a ratio to the baseline's time.
  static double call_limit(const GiveUp& give_up) {
    return kCallLimit * give_up.ratio + 0.1 / give_up.baseline_seconds;
  }

  // `a` and `b` in one runner session, rounds A B B A.
  measure::BenchReport side_by_side(const measure::BenchKernel& a, const measure::BenchKernel& b,
                                    const measure::BenchOptions& bo) const {
    return measure::bench(graph_, {a, b}, bo);
  }

  // The evaluation of a candidate the probe gave up on: its ratio to the baseline (the
  // fastest calls', or at least the call limit's when a call was stopped), never a pass.
  static Evaluation too_slow(const measure::BenchReport& bench, const GiveUp& give_up,
                             std::chrono::steady_clock::time_point start) {
    Evaluation e;
    e.verdict = verify::Verdict::TooSlow;
    e.penalty = 1;
    const bool stopped = bench.over_call_limit && give_up.baseline_seconds > 0;
    e.ratio_vs_baseline = stopped ? call_limit(give_up) : bench.fastest_ratio;
    e.min_seconds = bench.fastest.empty() ? 0 : bench.fastest[0];
    char text[200];
    std::snprintf(text, sizeof text,
                  "given up before verification: %sx%.3g of the baseline, over the x%.3g",
                  stopped ? "at least " : "", e.ratio_vs_baseline, give_up.ratio);
    e.message = std::string(text) + " its chain could accept (" + bench.message + ")";
    e.eval_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
  }

  // What a timing that did not run right counts as.
  static verify::Verdict verdict_of(measure::BenchStatus status) {
    if (status == measure::BenchStatus::Refused) return verify::Verdict::Refused;
    return status == measure::BenchStatus::Wrong ? verify::Verdict::Wrong : verify::Verdict::Crash;
  }

  // What the run database's message says about a timing taken on a busy machine.
  static std::string busy_note(const measure::BenchReport& bench) {
    if (bench.others_cpus < measure::kBusyOthers) return "";
    char text[160];
    std::snprintf(text, sizeof text, " (timed while other processes kept %.2f CPUs busy)",
                  bench.others_cpus);
    return text;
  }

  const ir::Graph& graph_;
  verify::GraphAt graph_at_;
  std::string baseline_;
  EvaluatorOptions options_;
};

}  // namespace

std::unique_ptr<Evaluator> make_local_evaluator(const ir::Graph& graph, verify::GraphAt graph_at,
                                                const std::string& baseline_source,
                                                EvaluatorOptions options) {
  return std::make_unique<LocalEvaluator>(graph, std::move(graph_at), baseline_source,
                                          std::move(options));
}

}  // namespace ollie::search
